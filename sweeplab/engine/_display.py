"""The live table of a running sweep: a sweep callback on the driver."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Mapping
from typing import Any

from sweeplab.engine._callbacks import SweepCallback, TrialView
from sweeplab.engine._datawait import DATA_WAIT_WARN
from sweeplab.keys import DATA_WAIT_KEY, ITERATION_KEY

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
    """Trial, status, iteration, metric, best so far and elapsed time, plus a progress bar."""

    def __init__(self, *, metric: str, mode: str, total_trials: int, max_iterations: int) -> None:
        self.metric = metric
        self.mode = mode
        self.total_trials = total_trials
        self.max_iterations = max_iterations
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
        if status in _ENDED:
            row["t1"] = time.monotonic()

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

        best = self.best()
        table = Table(box=None, pad_edge=False, header_style="bold")
        for column in ("trial", "status", "iter", self.metric, "best so far", "elapsed"):
            table.add_column(column, justify="left" if column in ("trial", "status") else "right")
        visible = list(self.rows.items())
        if len(visible) > 20:  # keep the running ones and the latest finished in view
            running = [kv for kv in visible if kv[1]["status"] == "RUNNING"]
            visible = running + [kv for kv in visible if kv[1]["status"] != "RUNNING"][-10:]
        for trial_id, row in visible:
            end = row.get("t1", time.monotonic())
            table.add_row(
                trial_id,
                Text(row["status"].lower(), style=_STATUS_STYLE.get(row["status"], "")),
                f"{row['iteration']}/{self.max_iterations}",
                _fmt(row["value"]),
                _fmt(row["best"]),
                f"{end - row['t0']:.0f}s",
            )
        done = sum(r["status"] in _ENDED for r in self.rows.values())
        elapsed = time.monotonic() - self.started
        header = Text(
            f"trials {done}/{self.total_trials} done · best {self.metric} {_fmt(best)} · "
            f"{elapsed:.0f}s elapsed"
        )
        bar = Table.grid()  # a grid row ends the bar's line before the table starts
        bar.add_row(ProgressBar(total=max(self.total_trials, 1), completed=done, width=60))
        warning = self.data_wait_warning()
        if warning is None:
            return Group(header, bar, table)
        return Group(header, bar, table, Text(f"warning: {warning}", style="yellow"))


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"
