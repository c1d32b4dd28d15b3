"""Shared helpers of the report tests: a hand-made SweepData and headless Chromium."""

from __future__ import annotations

import shutil
import subprocess
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


@dataclass
class Rendered:
    screenshot: Path
    console: list[str]  # the page's console messages, from Chromium's log on stderr


def _render(html: Path, png: Path, *, size: str = "1280,2400") -> Rendered:
    """Renders a local HTML file in headless Chromium: a PNG screenshot and the console log."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not installed (`make chromium` installs Debian's package)")
    result = subprocess.run(
        [
            chromium,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={png.parent / 'chromium-profile'}",
            f"--screenshot={png}",
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
    return Rendered(png, console)


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
