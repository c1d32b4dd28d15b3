"""The simulated backend of the trial loop: trials train on a clock that a learning curve sets.

A trial's iteration takes the seconds the curve gives it and reports the curve's metrics;
reports arrive in simulated-time order, ties by the order the trials were made. Starting a
trial, resuming it from its last report's checkpoint and moving results take no simulated
time.

A curve knows no checkpoint: a trial that PBT's exploit hands a donor's checkpoint and a new
config goes on from its next iteration on the curve of its new config, as if that config had
trained it so far (the donor's iterations and the recipient's are the same at a synchronous
round).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sweeplab._numbers import is_finite_number
from sweeplab.errors import SpecError
from sweeplab.loop import BackendReport, LoopTrial
from sweeplab.pareto import Objective
from sweeplab.simulation._records import find_metric

__all__ = ["Curve", "SimulatedBackend"]

Curve = Callable[[dict[str, Any], int], tuple[Mapping[str, float], float]]


class SimulatedBackend:
    """Trains trials against `curve` on a simulated clock (a `sweeplab.loop.TrialBackend`).

    Args:
        curve: ``curve(config, iteration) -> (metrics, seconds)``, called with a trial's
            decoded config.
        objectives: The metrics each report must hold.
    """

    def __init__(self, curve: Curve, objectives: Sequence[Objective]) -> None:
        self.curve = curve
        self.objectives = tuple(objectives)
        self.now = 0.0
        # The next report of each training trial: (arrival, trial index, trial, metrics,
        # seconds); a trial has one at most, so time and index order them.
        self._events: list[tuple[float, int, LoopTrial, dict[str, Any], float]] = []
        self._training: set[LoopTrial] = set()

    def train(self, trial: LoopTrial, iteration: int) -> None:
        metrics, seconds = self._call_curve(trial, iteration)
        self._training.add(trial)
        heapq.heappush(self._events, (self.now + seconds, trial.index, trial, metrics, seconds))

    def next_report(self) -> BackendReport | None:
        while self._events:
            time_s, _, trial, metrics, seconds = heapq.heappop(self._events)
            if trial not in self._training:
                continue  # ended while it trained: its report is dropped
            self._training.discard(trial)
            self.now = time_s
            return BackendReport(trial, metrics, seconds, time_s)
        return None

    def end(self, trial: LoopTrial) -> None:
        self._training.discard(trial)

    def copy_checkpoint(self, donor: LoopTrial, trial: LoopTrial) -> None:
        """Nothing to copy: the curve of the trial's new config goes on (module docstring)."""

    def _call_curve(self, trial: LoopTrial, iteration: int) -> tuple[dict[str, Any], float]:
        answer = self.curve(trial.decoded, iteration)
        if (
            not isinstance(answer, tuple)
            or len(answer) != 2
            or not isinstance(answer[0], Mapping)
            or not is_finite_number(answer[1])
            or answer[1] < 0
        ):
            raise SpecError(
                "curve(config, iteration) must return (metrics, seconds): a mapping of metric "
                "names to values and a finite number of seconds >= 0, but for "
                f"iteration {iteration} of config {trial.decoded!r} it returned {answer!r}."
            )
        metrics, seconds = answer
        for objective in self.objectives:
            if not find_metric(metrics, objective.name)[0]:
                raise SpecError(
                    f"curve(config, iteration) must report the sweep's metric {objective.name!r}, "
                    f"but for iteration {iteration} of config {trial.decoded!r} it returned the "
                    f"metrics {sorted(metrics)}."
                )
        return dict(metrics), float(seconds)
