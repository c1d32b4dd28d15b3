"""The live table: statuses, best so far, and a layout that reads on one screen."""

from __future__ import annotations

import types

from rich.console import Console

from sweeplab.engine._display import LiveTable, make_display_callback


def test_live_table_marks_early_stops_and_tracks_the_best() -> None:
    table = LiveTable(metric="loss", mode="min", total_trials=3, max_iterations=4)
    callback = make_display_callback(table)
    for trial_id, iterations, loss in (("a", 4, 0.5), ("b", 1, 0.9), ("c", 2, 0.7)):
        trial = types.SimpleNamespace(
            trial_id=trial_id, last_result={"training_iteration": iterations, "done": True}
        )
        callback.on_trial_start(0, [], trial)
        callback.on_trial_result(0, [], trial, {"training_iteration": iterations, "loss": loss})
        if trial_id != "c":
            callback.on_trial_complete(0, [], trial)
    assert {k: v["status"] for k, v in table.rows.items()} == {
        "a": "TERMINATED",  # ran its whole budget (Tune marks both kinds `done`)
        "b": "STOPPED",
        "c": "RUNNING",
    }
    assert table.best() == 0.5
    console = Console(width=100, record=True)
    console.print(table)
    lines = console.export_text().splitlines()
    assert lines[0].startswith("trials 2/3 done · best loss 0.5")
    assert lines[2].split() == ["trial", "status", "iter", "loss", "best", "so", "far", "elapsed"]
    assert lines[4].split()[:3] == ["b", "stopped", "1/4"]
