"""What a simulated sweep leaves behind: every report, every trial and the simulated clock."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from sweeplab._numbers import is_finite_number, is_number
from sweeplab.errors import SpecError
from sweeplab.pareto import Objective

__all__ = [
    "STATUSES",
    "Report",
    "SimulatedTrial",
    "Simulation",
    "find_metric",
    "metric_value",
]

# How a simulated trial ended.
STATUSES = ("finished", "stopped", "diverged")


@dataclasses.dataclass(frozen=True)
class Report:
    """One report of a simulated trial.

    Attributes:
        trial_id: The trial that reported.
        iteration: Its ``training_iteration``: 1 for the first report.
        metrics: The metrics the curve gave for that iteration.
        time_s: The simulated time at which the report arrived, in seconds since the sweep
            started.
    """

    trial_id: str
    iteration: int
    metrics: Mapping[str, Any]
    time_s: float


@dataclasses.dataclass(frozen=True)
class SimulatedTrial:
    """One trial of a simulated sweep.

    Attributes:
        trial_id: Its id, as the searcher and the scheduler knew it.
        config: The config its training function would get (decoded, in final nested shape).
        reports: Its reports, by iteration.
        status: ``"finished"`` (it trained ``max_iterations``), ``"stopped"`` (the scheduler
            or the iteration budget stopped it earlier) or ``"diverged"`` (it reported a NaN or
            infinite metric, and stopped there).
        stopped_at: The iteration of its last report; 0 when it reported nothing.
        exploits: PBT's exploits of it: per exploit, the iteration it had reached and the id
            of the donor whose config (explored) and checkpoint it took. Its `config` is the
            one it ended with.
    """

    trial_id: str
    config: dict[str, Any]
    reports: list[Report]
    status: str
    stopped_at: int
    exploits: tuple[tuple[int, str], ...] = ()


@dataclasses.dataclass(frozen=True)
class Simulation:
    """A simulated sweep: its trials and reports on the simulated clock.

    Attributes:
        trials: Every trial, in the order the searcher created them.
        reports: Every report, in the order they arrived (simulated time; ties by trial).
        wall_s: Simulated seconds from the start to the last report.
        iterations: Iterations trained in all (the number of reports).
        metric: The sweep's metric (its first objective's).
        mode: The sweep's mode, ``"min"`` or ``"max"``.
        objectives: The sweep's objectives; by default the one of `metric` and `mode`.
    """

    trials: list[SimulatedTrial]
    reports: list[Report]
    wall_s: float
    iterations: int
    metric: str
    mode: str
    objectives: tuple[Objective, ...] = ()

    def __post_init__(self) -> None:
        if not self.objectives:
            object.__setattr__(self, "objectives", (Objective(self.metric, self.mode),))

    def points(self) -> dict[str, dict[str, float] | None]:
        """Each trial's point: the values of the objectives in its last report holding them all.

        This is the point by which sweeplab ranks a trial of a multi-objective sweep. A report
        holds an objective when it reports a number for it (a key, or an ``a/b`` path into
        nested metrics); NaN and infinities count, so a diverged trial's point is the report it
        diverged at, which a Pareto ranking does not place.

        Returns:
            Each trial's id (in the order of `trials`) -> its objectives' values as the curve
            reported them (not signed), by objective name; None for a trial with no report
            that holds every objective.
        """
        names = [objective.name for objective in self.objectives]
        points: dict[str, dict[str, float] | None] = {}
        for trial in self.trials:
            points[trial.trial_id] = None
            for report in reversed(trial.reports):
                values = [metric_value(report.metrics, name) for name in names]
                if all(is_number(value) for value in values):
                    points[trial.trial_id] = {
                        name: float(value) for name, value in zip(names, values, strict=True)
                    }
                    break
        return points

    def best(self, metric: str | None = None, mode: str | None = None) -> float | None:
        """The best finite value of `metric` that any trial reported; None if there is none.

        Args:
            metric: The metric; None: the sweep's.
            mode: ``"min"`` or ``"max"``; None: the sweep's.
        """
        metric = self.metric if metric is None else metric
        mode = self.mode if mode is None else mode
        if mode not in ("min", "max"):
            raise SpecError(f"mode must be 'min' or 'max', but got {mode!r}.")
        values = [
            float(report.metrics[metric])
            for report in self.reports
            if is_finite_number(report.metrics.get(metric))
        ]
        if not values:
            return None
        return min(values) if mode == "min" else max(values)


def metric_value(metrics: Mapping[str, Any], name: str) -> Any:
    """The value of metric `name` in a report: its key, else its ``a/b`` path; None if absent."""
    return find_metric(metrics, name)[1]


def find_metric(metrics: Mapping[str, Any], name: str) -> tuple[bool, Any]:
    """Whether a report holds metric `name` (its key, else its ``a/b`` path), and its value."""
    if name in metrics:
        return True, metrics[name]
    value: Any = metrics
    for part in name.split("/"):
        if not isinstance(value, Mapping) or part not in value:
            return False, None
        value = value[part]
    return True, value
