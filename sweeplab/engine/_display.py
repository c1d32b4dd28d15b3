"""The live table of a running sweep: a sweep callback on the driver."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sweeplab.engine._callbacks import SweepCallback, TrialView
from sweeplab.engine._datawait import DATA_WAIT_WARN
from sweeplab.keys import DATA_WAIT_KEY, FRONT_INFEASIBLE, ITERATION_KEY
from sweeplab.pareto import Constraint, Objective, front_numbers, point_of

__all__ = ["LiveTable"]

_STATUS_STYLE = {
    "PENDING": "dim",
    "RUNNING": "cyan",
    "TERMINATED": "green",
    "STOPPED": "yellow",
    "DIVERGED": "magenta",
    "ERROR": "red",
}

_ENDED = ("TERMINATED", "STOPPED", "DIVERGED", "ERROR")


class LiveTable(SweepCallback):
    """Trial, status, iteration, metric, best so far and elapsed time, plus a progress bar.

    Of a multi-objective sweep (several `objectives`): each objective's latest reported value
    and the trial's current Pareto front among the trials shown, instead of the best so far.
    A trial's point is its latest report that held every objective, as in the ranking; a
    point that breaks a constraint shows ``infeasible``, and a trial without a point (or
    diverged) shows ``-``.
    """

    def __init__(
        self,
        *,
        metric: str,
        mode: str,
        total_trials: int,
        max_iterations: int,
        objectives: Sequence[Objective] = (),
        constraints: Sequence[Constraint] = (),
    ) -> None:
        self.metric = metric
        self.mode = mode
        self.total_trials = total_trials
        self.max_iterations = max_iterations
        self.objectives = tuple(objectives) if len(objectives) > 1 else ()
        self.constraints = tuple(constraints)
        self.started = time.monotonic()
        self.rows: dict[str, dict[str, Any]] = {}
        self.data_wait: dict[str, list[float]] = {}

    def _better(self, a: float, b: float) -> bool:
        return a < b if self.mode == "min" else a > b

    def update(self, trial_id: str, result: Mapping[str, Any] | None, status: str) -> None:
        row = self.rows.setdefault(
            trial_id,
            {
                "status": "PENDING",
                "iteration": 0,
                "value": None,
                "best": None,
                "values": {},
                "point": None,
                "t0": time.monotonic(),
            },
        )
        row["status"] = status
        if result is not None:
            row["iteration"] = int(result.get(ITERATION_KEY, row["iteration"]))
            wait = result.get(DATA_WAIT_KEY)
            if isinstance(wait, (int, float)):
                self.data_wait.setdefault(trial_id, []).append(float(wait))
            value = result.get(self.metric)
            if isinstance(value, (int, float)) and math.isfinite(value):
                row["value"] = float(value)
                if row["best"] is None or self._better(value, row["best"]):
                    row["best"] = float(value)
            if self.objectives:
                self._note_objectives(row, result)
        if status in _ENDED:
            row["t1"] = time.monotonic()

    def _note_objectives(self, row: dict[str, Any], result: Mapping[str, Any]) -> None:
        reported = {
            o.name: float(result[o.name])
            for o in self.objectives
            if isinstance(result.get(o.name), (int, float)) and math.isfinite(result[o.name])
        }
        row["values"].update(reported)
        if len(reported) == len(self.objectives):
            row["point"] = reported

    def fronts(self, trial_ids: Iterable[str]) -> dict[str, str]:
        """Each trial's Pareto front among `trial_ids` (``"1"`` = non-dominated among them).

        Fronts are numbered over the feasible trials with a point; the others read
        ``infeasible``, or ``-`` without a point or once diverged.
        """
        shown: dict[str, str] = {}
        feasible: list[str] = []
        for trial_id in trial_ids:
            row = self.rows[trial_id]
            point = row["point"]
            if point is None or row["status"] == "DIVERGED":
                shown[trial_id] = "-"
            elif all(c.holds(point.get(c.metric)) for c in self.constraints):
                feasible.append(trial_id)
            else:
                shown[trial_id] = FRONT_INFEASIBLE
        numbers = front_numbers(
            [point_of(self.rows[t]["point"], self.objectives) for t in feasible]
        )
        shown.update((t, str(n)) for t, n in zip(feasible, numbers, strict=True))
        return shown

    def on_trial_start(self, trial: TrialView) -> None:
        self.update(trial.trial_id, None, "RUNNING")

    def on_trial_result(self, trial: TrialView, result: Mapping[str, Any]) -> None:
        self.update(trial.trial_id, result, "RUNNING")

    def on_trial_complete(self, trial: TrialView) -> None:
        # A trial that ended short of its budget, by itself or not, reads as stopped early.
        reached = trial.iteration >= self.max_iterations
        self.update(trial.trial_id, None, "TERMINATED" if reached else "STOPPED")

    def on_trial_stop(self, trial: TrialView) -> None:
        self.update(trial.trial_id, None, "DIVERGED" if trial.status == "DIVERGED" else "STOPPED")

    def on_trial_error(self, trial: TrialView) -> None:
        self.update(trial.trial_id, None, "ERROR")

    def best(self) -> float | None:
        values = [r["best"] for r in self.rows.values() if r["best"] is not None]
        if not values:
            return None
        return min(values) if self.mode == "min" else max(values)

    def data_wait_warning(self) -> str | None:
        """One line when waiting for data took most of the epochs of some trials."""
        medians = {t: statistics.median(v) for t, v in self.data_wait.items() if v}
        slow = sorted(
            (t for t, m in medians.items() if m > DATA_WAIT_WARN), key=lambda t: medians[t]
        )
        if not slow:
            return None
        worst = slow[-1]
        return (
            f"data loading dominates: {len(slow)} of {len(medians)} trials spent more than "
            f"{DATA_WAIT_WARN:.0%} of each epoch waiting for data (worst {worst}: "
            f"{medians[worst]:.0%}, metric {DATA_WAIT_KEY}); give the DataLoader "
            "num_workers, or move preprocessing out of the dataset's __getitem__"
        )

    def __rich__(self) -> Any:
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        visible = list(self.rows.items())
        if len(visible) > 20:  # keep the running ones and the latest finished in view
            running = [kv for kv in visible if kv[1]["status"] == "RUNNING"]
            visible = running + [kv for kv in visible if kv[1]["status"] != "RUNNING"][-10:]
        fronts = self.fronts(trial_id for trial_id, _ in visible) if self.objectives else {}
        if self.objectives:
            columns = [f"{o.name} ({o.mode})" for o in self.objectives] + ["front"]
        else:
            columns = [self.metric, "best so far"]
        table = Table(box=None, pad_edge=False, header_style="bold")
        for column in ("trial", "status", "iter", *columns, "elapsed"):
            table.add_column(column, justify="left" if column in ("trial", "status") else "right")
        for trial_id, row in visible:
            end = row.get("t1", time.monotonic())
            if self.objectives:
                cells = [_fmt(row["values"].get(o.name)) for o in self.objectives]
                cells.append(fronts[trial_id])
            else:
                cells = [_fmt(row["value"]), _fmt(row["best"])]
            table.add_row(
                trial_id,
                Text(row["status"].lower(), style=_STATUS_STYLE.get(row["status"], "")),
                f"{row['iteration']}/{self.max_iterations}",
                *cells,
                f"{end - row['t0']:.0f}s",
            )
        done = sum(r["status"] in _ENDED for r in self.rows.values())
        elapsed = time.monotonic() - self.started
        if self.objectives:
            on_front = sum(front == "1" for front in fronts.values())
            standing = f"{on_front} of the {len(visible)} shown on front 1"
        else:
            standing = f"best {self.metric} {_fmt(self.best())}"
        header = Text(
            f"trials {done}/{self.total_trials} done · {standing} · {elapsed:.0f}s elapsed"
        )
        bar = Table.grid()  # a grid row ends the bar's line before the table starts
        bar.add_row(ProgressBar(total=max(self.total_trials, 1), completed=done, width=60))
        warning = self.data_wait_warning()
        if warning is None:
            return Group(header, bar, table)
        return Group(header, bar, table, Text(f"warning: {warning}", style="yellow"))


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


# Where output is not a terminal, the width a console draws to: no line is ever broken.
UNLIMITED_WIDTH = 1_000_000


def make_console(*, stderr: bool = False) -> Any:
    """A rich Console: a terminal's width, else lines that never wrap.

    Where the output is not a terminal (a pipe, a file, a CI log) there is no width to fit,
    and a line broken at 80 columns breaks the paths in it: they could not be copied or
    grepped. The CLI, the live table and ``sweeplab status`` all draw through it.
    """
    from rich.console import Console

    console = Console(stderr=stderr)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, width=UNLIMITED_WIDTH, soft_wrap=True)
