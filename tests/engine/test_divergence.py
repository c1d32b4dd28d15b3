"""Diverged trials: the stopper's rule, the adapter's status and the live table (no Ray)."""

from __future__ import annotations

import math
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console

from sweeplab._numbers import diverged
from sweeplab.engine import TrialView
from sweeplab.engine._display import LiveTable
from sweeplab.engine._divergence import DivergenceStopper
from sweeplab.engine._events import SweepEvents


@pytest.mark.parametrize(
    ("result", "metric", "expected"),
    [
        ({"loss": math.nan}, "loss", True),
        ({"loss": math.inf}, "loss", True),
        ({"loss": -math.inf}, "loss", True),
        ({"loss": np.float32("nan")}, "loss", True),
        ({"val": {"loss": math.nan}}, "val/loss", True),  # nested, as Tune flattens it
        ({"val/loss": math.inf}, "val/loss", True),
        ({"loss": 0.5}, "loss", False),
        ({"loss": 1e308}, "loss", False),
        ({"loss": None}, "loss", False),
        ({"loss": "nan"}, "loss", False),  # not a number: not a divergence
        ({"acc": math.nan}, "loss", False),  # another metric
        ({}, "loss", False),
        (None, "loss", False),
    ],
)
def test_diverged(result: dict[str, Any] | None, metric: str, expected: bool) -> None:
    assert diverged(result, metric) is expected
    if result is not None:
        assert DivergenceStopper(metric)("t", result) is expected


def test_the_stopper_never_stops_the_whole_sweep() -> None:
    stopper = DivergenceStopper("loss")
    stopper("t", {"loss": math.nan})
    assert stopper.stop_all() is False


def _trial(trial_id: str, tmp_path: Path) -> Any:
    return types.SimpleNamespace(
        trial_id=trial_id, config={}, status="PENDING", local_path=str(tmp_path),
        error_file=None, last_result={},
    )  # fmt: skip


class _Ends:
    def __init__(self) -> None:
        self.ends: dict[str, tuple[str, str]] = {}

    def __getattr__(self, name: str) -> Any:
        def note(trial: TrialView, *rest: Any) -> None:
            if name in ("on_trial_complete", "on_trial_stop", "on_trial_error"):
                self.ends[trial.trial_id] = (name, trial.status)

        return note


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_a_diverged_trial_is_told_as_a_stop_with_its_status(bad: float, tmp_path: Path) -> None:
    recorder = _Ends()
    events = SweepEvents([recorder], max_iterations=4, metric="loss")  # type: ignore[list-item]
    for trial_id, losses in (("bad", [0.5, bad]), ("ok", [0.5, 0.4]), ("late", [0.5] * 3 + [bad])):
        trial = _trial(trial_id, tmp_path)
        events.on_trial_start(trial)
        for step, loss in enumerate(losses, start=1):
            done = step == len(losses) and trial_id != "ok"
            events.on_trial_result(trial, {"training_iteration": step, "loss": loss, "done": done})
        events.on_trial_complete(trial)
    assert recorder.ends == {
        "bad": ("on_trial_stop", "DIVERGED"),
        "ok": ("on_trial_complete", "TERMINATED"),
        "late": ("on_trial_stop", "DIVERGED"),  # diverged at its last iteration: still diverged
    }


def test_the_live_table_shows_diverged() -> None:
    table = LiveTable(metric="loss", mode="min", total_trials=2, max_iterations=4)
    for trial_id, loss in (("a", 0.5), ("b", math.nan)):
        view = TrialView(trial_id=trial_id, config={}, status="RUNNING", iteration=1)
        table.on_trial_start(view)
        table.on_trial_result(view, {"training_iteration": 1, "loss": loss})
    table.on_trial_stop(TrialView(trial_id="b", config={}, status="DIVERGED", iteration=1))
    assert table.rows["b"]["status"] == "DIVERGED"
    assert table.best() == 0.5
    console = Console(width=100, record=True)
    console.print(table)
    lines = console.export_text().splitlines()
    assert lines[0].startswith("trials 1/2 done")
    assert [line.split()[:3] for line in lines[3:5]] == [
        ["a", "running", "1/4"],
        ["b", "diverged", "1/4"],
    ]
