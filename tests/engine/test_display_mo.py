"""The live table of a multi-objective sweep: each objective's latest value and the front."""

from __future__ import annotations

import math

from rich.console import Console

from sweeplab.engine import TrialView
from sweeplab.engine._display import LiveTable
from sweeplab.pareto import Objective, parse_constraint

OBJECTIVES = (Objective("acc", "max"), Objective("ms", "min"))

# trial: its reports (acc, ms), and how it ends
TRIALS: dict[str, tuple[list[dict[str, float]], str | None]] = {
    "a": ([{"acc": 0.5, "ms": 1.0}, {"acc": 0.9, "ms": 4.0}], "complete"),  # front 1
    "b": ([{"acc": 0.8, "ms": 2.0}], None),  # front 1
    "c": ([{"acc": 0.7, "ms": 3.0}], "complete"),  # dominated by b: front 2
    "d": ([{"acc": 0.6, "ms": 5.0}], "stop"),  # dominated by c: front 3
    "e": ([{"acc": 0.99, "ms": 9.0}], "complete"),  # breaks ms <= 6: infeasible
    "f": ([{"acc": 0.95, "ms": 1.0}, {"acc": 0.97}], None),  # latest report lacks ms
    "g": ([{"acc": 0.3}], None),  # never reported ms: no point
    "h": ([{"acc": 0.99, "ms": 0.5}, {"acc": math.nan, "ms": 0.5}], "diverged"),
}


def _table(constraints: str | None = "ms <= 6") -> LiveTable:
    table = LiveTable(
        metric="acc",
        mode="max",
        total_trials=10,
        max_iterations=2,
        objectives=OBJECTIVES,
        constraints=[parse_constraint(constraints)] if constraints else [],
    )
    for trial_id, (reports, end) in TRIALS.items():
        view = TrialView(trial_id=trial_id, config={}, status="RUNNING", iteration=len(reports))
        table.on_trial_start(view)
        for step, report in enumerate(reports, start=1):
            table.on_trial_result(view, {"training_iteration": step, **report})
        if end == "complete":
            table.on_trial_complete(view)
        elif end == "stop":
            table.on_trial_stop(view)
        elif end == "diverged":
            table.on_trial_stop(
                TrialView(trial_id=trial_id, config={}, status="DIVERGED", iteration=2)
            )
    return table


def test_the_front_of_each_trial_among_those_shown() -> None:
    table = _table()
    # f's point is its first report (the latest one holding both), which dominates a, b, c, d.
    assert table.fronts(table.rows) == {
        "f": "1",
        "a": "2",
        "b": "2",
        "c": "3",
        "d": "4",
        "e": "infeasible",
        "g": "-",
        "h": "-",
    }
    # Without f and with no constraint, e joins front 1.
    unconstrained = _table(constraints=None)
    assert unconstrained.fronts([t for t in TRIALS if t != "f"]) == {
        "a": "1",
        "b": "1",
        "e": "1",
        "c": "2",
        "d": "3",
        "g": "-",
        "h": "-",
    }


def test_the_table_shows_every_objective_and_the_front() -> None:
    console = Console(width=120, record=True)
    console.print(_table())
    lines = console.export_text().splitlines()
    assert lines[0].startswith("trials 5/10 done · 1 of the 8 shown on front 1 · ")
    assert lines[2].split() == [
        "trial", "status", "iter", "acc", "(max)", "ms", "(min)", "front", "elapsed",
    ]  # fmt: skip
    rows = {line.split()[0]: line.split()[1:-1] for line in lines[3:]}
    assert rows == {
        "a": ["terminated", "2/2", "0.9", "4", "2"],
        "b": ["running", "1/2", "0.8", "2", "2"],
        "c": ["stopped", "1/2", "0.7", "3", "3"],
        "d": ["stopped", "1/2", "0.6", "5", "4"],
        "e": ["stopped", "1/2", "0.99", "9", "infeasible"],
        "f": ["running", "2/2", "0.97", "1", "1"],  # its latest value of each objective
        "g": ["running", "1/2", "0.3", "-", "-"],
        "h": ["diverged", "2/2", "0.99", "0.5", "-"],
    }


def test_a_single_metric_table_is_unchanged_by_the_objectives_field() -> None:
    table = LiveTable(
        metric="loss",
        mode="min",
        total_trials=1,
        max_iterations=1,
        objectives=(Objective("loss", "min"),),
    )
    view = TrialView(trial_id="a", config={}, status="RUNNING", iteration=1)
    table.on_trial_result(view, {"training_iteration": 1, "loss": 0.5})
    console = Console(width=100, record=True)
    console.print(table)
    lines = console.export_text().splitlines()
    assert lines[0].startswith("trials 0/1 done · best loss 0.5")
    assert lines[2].split() == ["trial", "status", "iter", "loss", "best", "so", "far", "elapsed"]
