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
from mlflow_store import store_uri

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


def _render(html: Path, png: Path, *, size: str = "1280,2400", anchor: str = "") -> Rendered:
    """Renders a local HTML file in headless Chromium with the network off: a PNG screenshot
    (from the element ``anchor`` names, if any), the console log and the rendered DOM."""
    url = html.resolve().as_uri() + (f"#{anchor}" if anchor else "")
    result = subprocess.run(
        [
            _chromium(),
            *CHROMIUM_FLAGS,
            *NETWORK_OFF,
            f"--user-data-dir={png.parent / 'chromium-profile'}",
            f"--screenshot={png}",
            f"--log-net-log={png.parent / 'net-log.json'}",
            f"--window-size={size}",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    console = [
        line for line in result.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line
    ]
    dom = dump_dom(url, png.parent / "chromium-profile", extra=[*NETWORK_OFF])
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
    """A SweepData as load_sweep returns it: params as strings, a curve per trial.

    A row's curve is ``value + 1 / step`` at steps 1 to ``row["steps"]`` (3 by default).
    """
    import pandas as pd

    from sweeplab.tracking import SweepData

    trials, points = [], []
    for rank, row in enumerate(rows, start=1):
        trial_id = f"t{rank:02d}"
        value = row["value"]
        steps = row.get("steps", 3)
        trials.append(
            {
                "trial_id": trial_id,
                "run_id": f"run{rank}",
                "status": row.get("status", "finished"),
                "rank": rank,
                "best": value,
                "last": value,
                "iterations": steps,
                "restarts": 0,
                **{f"config.{k}": str(v) for k, v in row["config"].items()},
            }
        )
        for step in range(1, steps + 1):
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


# An ASHA-like sweep (grace period 1, reduction factor 3, 9 iterations): trial i's loss at step
# s is x + 1 / s; 2 trials finished, 3 stopped at rung 3 and 7 at rung 1 (one of them diverged).
ASHA_STEPS = [9, 9, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1]


def _asha_rows() -> list[dict[str, Any]]:
    rows = []
    for i, steps in enumerate(ASHA_STEPS):
        config: dict[str, Any] = {"x": round(0.05 + 0.08 * i, 2), "lr": 10 ** -(1 + (i % 4) / 2)}
        config["optimizer.name"] = "sgd" if i % 2 else "adam"
        if i % 2:
            config["optimizer.momentum"] = round(0.1 * i, 2)
        status = "finished" if steps == 9 else "stopped_early"
        rows.append({"value": config["x"], "steps": steps, "status": status, "config": config})
    rows[6]["status"] = "diverged"
    return rows


@pytest.fixture
def asha_sweep() -> Any:
    """The SweepData of `ASHA_STEPS` (a hand-made `_fake_sweep`, no Ray, no MLflow)."""
    return _fake_sweep(_asha_rows())


@pytest.fixture
def render() -> Any:
    """``render(html, png, size=..., anchor=...) -> Rendered``: headless Chromium (see
    `_render`)."""
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
RECORDED_TRIALS = 10
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
    num_trials: int


@pytest.fixture(scope="session")
def recorded(ray_local: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RecordedSweep]:
    """Ten one-worker trials of the toy spec, a conditional space, random search + ASHA (12
    iterations: rungs at 1, 3 and 9, so most trials stop early), one at a time so that ASHA's
    decisions do not depend on timing; shared by the report, notebook and UI tests."""
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
        f'name="report-toy", space={SPACE}, metric="loss", mode="min", searcher="random", '
        f'scheduler="asha", max_iterations=12, num_trials={RECORDED_TRIALS}, '
        "max_concurrent_trials=1, seed=1",
        epochs=12,
        sleep=0.01,
        checkpoint_every=6,
    )
    uri = store_uri(folder)
    run_sweep(
        sweeplab.load_spec(spec),
        SweepOptions(spec_path=spec, storage=folder / "runs", tracking_uri=uri, live=False),
    )
    best = sweeplab.best_trial("report-toy", tracking_uri=uri)
    yield RecordedSweep("report-toy", folder, uri, best["trial_id"], RECORDED_TRIALS)


@pytest.fixture
def chromium_dom() -> Any:
    """``chromium_dom(url, profile, budget_ms=..., extra=...) -> str`` (see `dump_dom`)."""
    return dump_dom


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that renders in Chromium is marked `browser` (`make check` leaves it out)."""
    for item in items:
        if {"render", "chromium_dom"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.browser)
