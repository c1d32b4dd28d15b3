"""Shared helpers of the report tests: a hand-made SweepData and headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
]


# Every http(s) request goes to a proxy that is not there, so nothing leaves the machine.
NETWORK_OFF = ["--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>"]


@dataclass
class Rendered:
    screenshot: Path
    console: list[str]  # the page's console messages, from Chromium's log on stderr
    dom: str  # the DOM after the page's scripts ran
    requests: list[str]  # the http(s) URLs the page asked for (Chromium's own left out)


def _chromium() -> str:
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not installed (`make chromium` installs Debian's package)")
    return chromium


def dump_dom(url: str, profile: Path, *, budget_ms: int = 15_000, extra: Sequence[str] = ()) -> str:
    """The DOM of a page after its scripts ran for ``budget_ms`` of virtual time."""
    result = subprocess.run(
        [
            _chromium(),
            *CHROMIUM_FLAGS,
            *extra,
            f"--user-data-dir={profile}",
            f"--virtual-time-budget={budget_ms}",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def _render(html: Path, png: Path, *, size: str = "1280,2400") -> Rendered:
    """Renders a local HTML file in headless Chromium with the network off: a PNG screenshot,
    the console log and the rendered DOM."""
    result = subprocess.run(
        [
            _chromium(),
            *CHROMIUM_FLAGS,
            *NETWORK_OFF,
            f"--user-data-dir={png.parent / 'chromium-profile'}",
            f"--screenshot={png}",
            f"--log-net-log={png.parent / 'net-log.json'}",
            f"--window-size={size}",
            html.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    console = [
        line for line in result.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line
    ]
    dom = dump_dom(html.resolve().as_uri(), png.parent / "chromium-profile", extra=[*NETWORK_OFF])
    return Rendered(png, console, dom, _page_requests(png.parent / "net-log.json"))


# Headless Chromium still calls Google (updates, accounts, time) whatever its flags say.
_CHROMIUM_OWN = re.compile(r"https?://[^/]*\b(google\.com|googleapis\.com|gstatic\.com)[:/]")


def _page_requests(net_log: Path) -> list[str]:
    """The http(s) URLs in a Chromium net log that Chromium itself did not ask for."""
    urls = set(re.findall(r'"url":"(https?://[^"]*)"', net_log.read_text(errors="replace")))
    return sorted(u for u in urls if not _CHROMIUM_OWN.match(u))


def _pixel_std(png: Path) -> float:
    """The standard deviation of a PNG's pixel values (0 for a blank image)."""
    import matplotlib.image

    return float(matplotlib.image.imread(png)[..., :3].std())


def _fake_sweep(
    rows: list[dict[str, Any]], *, mode: str = "min", rank_by: str = "best", name: str = "fake"
) -> Any:
    """A SweepData as load_sweep returns it: params as strings, a 3-step curve per trial."""
    import pandas as pd

    from sweeplab.tracking import SweepData

    trials, points = [], []
    for rank, row in enumerate(rows, start=1):
        trial_id = f"t{rank:02d}"
        value = row["value"]
        trials.append(
            {
                "trial_id": trial_id,
                "run_id": f"run{rank}",
                "status": row.get("status", "finished"),
                "rank": rank,
                "best": value,
                "last": value,
                "iterations": 3,
                "restarts": 0,
                **{f"config.{k}": str(v) for k, v in row["config"].items()},
            }
        )
        for step in (1, 2, 3):
            points.append(
                {
                    "trial_id": trial_id,
                    "rank": rank,
                    "metric": "loss",
                    "step": step,
                    "value": value + 1.0 / step,
                    "timestamp": pd.Timestamp(0),
                }
            )
    frame = pd.DataFrame(trials)
    if not frame.empty:
        frame["rank"] = frame["rank"].astype("Int64")
    best = rows[0] if rows else None
    return SweepData(
        name=name,
        metric="loss",
        mode=mode,
        parent_run_id="parent",
        trials=frame,
        history=pd.DataFrame(
            points, columns=["trial_id", "rank", "metric", "step", "value", "timestamp"]
        ),
        best={"trial_id": "t01", "value": best["value"], "config": best["config"]} if best else {},
        settings={"searcher": "random", "scheduler": "fifo", "rank_by": rank_by},
    )


@pytest.fixture
def render() -> Any:
    """``render(html, png, size=...) -> Rendered``: headless Chromium (see `_render`)."""
    return _render


@pytest.fixture
def pixel_std() -> Any:
    """``pixel_std(png) -> float``: 0 for a blank image."""
    return _pixel_std


@pytest.fixture
def fake_sweep() -> Any:
    """``fake_sweep(rows, mode=..., rank_by=..., name=...) -> SweepData`` (see `_fake_sweep`)."""
    return _fake_sweep


ROOT = Path(__file__).resolve().parents[2]
SPACE = (
    '{"x": uniform(0, 1), "opt": choice({"sgd": {"lr": loguniform(1e-3, 1e-1)}, '
    '"adam": {"beta": uniform(0.8, 0.99)}})}'
)


@dataclass
class RecordedSweep:
    name: str
    folder: Path
    tracking_uri: str
    best_trial_id: str


@pytest.fixture(scope="session")
def recorded(ray_local: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RecordedSweep]:
    """Four one-worker trials of the toy spec, a conditional space, Optuna + ASHA; shared by
    the report, notebook and UI tests."""
    sys.path.insert(0, str(ROOT / "tests" / "engine"))
    try:
        from toy_spec import write_spec
    finally:
        sys.path.remove(str(ROOT / "tests" / "engine"))
    import sweeplab
    from sweeplab.engine import SweepOptions, run_sweep

    folder = tmp_path_factory.mktemp("report_sweep")
    spec = write_spec(
        folder,
        f'name="report-toy", space={SPACE}, metric="loss", mode="min", searcher="optuna", '
        'scheduler="asha", max_iterations=3, num_trials=4, seed=1',
        epochs=3,
        sleep=0.01,
        checkpoint_every=3,
    )
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    run_sweep(
        sweeplab.load_spec(spec),
        SweepOptions(spec_path=spec, storage=folder / "runs", tracking_uri=uri, live=False),
    )
    best = sweeplab.best_trial("report-toy", tracking_uri=uri)
    yield RecordedSweep("report-toy", folder, uri, best["trial_id"])


@pytest.fixture
def chromium_dom() -> Any:
    """``chromium_dom(url, profile, budget_ms=..., extra=...) -> str`` (see `dump_dom`)."""
    return dump_dom


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that renders in Chromium is marked `browser` (`make check` leaves it out)."""
    for item in items:
        if {"render", "chromium_dom"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.browser)
