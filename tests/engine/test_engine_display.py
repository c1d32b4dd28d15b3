"""The live table: statuses, best so far, and a layout that reads on one screen."""

from __future__ import annotations

from rich.console import Console

from sweeplab.engine import TrialView
from sweeplab.engine._display import LiveTable


def test_live_table_marks_early_stops_and_tracks_the_best() -> None:
    table = LiveTable(metric="loss", mode="min", total_trials=4, max_iterations=4)
    for trial_id, iterations, loss, end in (
        ("a", 4, 0.5, "complete"),
        ("b", 1, 0.9, "stop"),
        ("c", 2, 0.7, None),
        ("d", 3, 0.8, "complete"),
    ):
        view = TrialView(trial_id=trial_id, config={}, status="RUNNING", iteration=iterations)
        table.on_trial_start(view)
        table.on_trial_result(view, {"training_iteration": iterations, "loss": loss})
        if end == "complete":
            table.on_trial_complete(view)
        elif end == "stop":
            table.on_trial_stop(view)
    assert {k: v["status"] for k, v in table.rows.items()} == {
        "a": "TERMINATED",  # ran its whole budget
        "b": "STOPPED",  # stopped by the scheduler
        "c": "RUNNING",
        "d": "STOPPED",  # ended short of its budget by itself: reads as stopped early
    }
    assert table.best() == 0.5
    console = Console(width=100, record=True)
    console.print(table)
    lines = console.export_text().splitlines()
    assert lines[0].startswith("trials 3/4 done · best loss 0.5")
    assert lines[2].split() == ["trial", "status", "iter", "loss", "best", "so", "far", "elapsed"]
    assert lines[4].split()[:3] == ["b", "stopped", "1/4"]
