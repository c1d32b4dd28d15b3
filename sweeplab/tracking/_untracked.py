"""Ranking an untracked sweep (no MLflow): from Tune's own record of its trials, or from the
trial events of sweeplab's trial loop as they happen."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweeplab.pareto import Constraint, Objective
from sweeplab.tracking._ranking import SweepSummary
from sweeplab.tracking._trials import TrialEvents

__all__ = ["UntrackedRanking", "rank_tune_results"]


@dataclass
class _FinishedTrial:
    """The attributes of a Tune trial that :class:`TrialEvents` reads, from a ``Result``."""

    trial_id: str
    config: dict[str, Any]
    path: str | None
    local_path: str | None = None


def rank_tune_results(
    results: Iterable[Any],
    *,
    metric: str,
    mode: str,
    rank_by: str = "best",
    config_decoder: Callable[[dict], dict] = lambda config: config,
    max_iterations: int | None = None,
    objectives: tuple[Objective, ...] = (),
    constraints: tuple[Constraint, ...] = (),
    pick: str | None = None,
) -> SweepSummary:
    """Ranks a finished Tune run's trials from what Tune recorded, without MLflow.

    The same records and ranking as a tracked sweep, read from each trial's ``result.json``.
    A trial whose config PBT changed is recorded with its last config.

    Args:
        results: Tune's ``ResultGrid`` (or its ``Result`` objects).
        metric: Metric that ranks trials.
        mode: ``"min"`` or ``"max"``.
        rank_by: ``"best"`` or ``"last"`` reported value.
        config_decoder: Turns a Tune (backend-shaped) config into the nested user config.
        max_iterations: A trial's budget in reports.
        objectives: Several objectives rank the trials by Pareto front, as a tracked sweep
            does; the first must be ``metric``/``mode``. Empty or one: the single metric.
        constraints: Bounds on the objectives' values of a multi-objective sweep.
        pick: The rule that picks the best trial from the front; ``None``: the first trial.
    """
    events = TrialEvents(
        metric=metric,
        mode=mode,
        rank_by=rank_by,
        config_decoder=config_decoder,
        scheduler_name="",
        max_iterations=max_iterations,
        backfill=True,
        objectives=objectives,
        constraints=constraints,
    )
    for result in results:
        trial_id = (result.metrics or {}).get("trial_id") or Path(result.path).name
        trial = _FinishedTrial(trial_id=trial_id, config=result.config or {}, path=result.path)
        state = events.register(trial)
        if not state.iterations and result.metrics:  # no result.json: Tune's last result
            events.ingest(state, result.metrics)
        if result.error is not None:
            events.on_error(trial, None)
        else:
            events.on_complete(trial)
    return SweepSummary(
        trials=events.rank(),  # the tracker's ranking; an untracked sink tags nothing
        metric=metric,
        mode=mode,
        rank_by=rank_by,
        objectives=events.objectives,
        constraints=events.constraints,
        pick_rule=pick,
    )


class UntrackedRanking:
    """The tracker's record and ranking of a sweep's trials, kept in memory (no MLflow).

    It takes the trial events of `SweepTracker` under the same names (``trial_added``,
    ``trial_started``, ``trial_reported``, ...), so whatever tells a tracker can tell it, and
    ranks the trials as a tracked sweep does (`summary`).

    Args:
        Those of `rank_tune_results` but the results.
    """

    def __init__(
        self,
        *,
        metric: str,
        mode: str,
        rank_by: str = "best",
        config_decoder: Callable[[dict], dict] = lambda config: config,
        scheduler_name: str = "",
        max_iterations: int | None = None,
        objectives: tuple[Objective, ...] = (),
        constraints: tuple[Constraint, ...] = (),
        pick: str | None = None,
    ) -> None:
        self._events = TrialEvents(
            metric=metric,
            mode=mode,
            rank_by=rank_by,
            config_decoder=config_decoder,
            scheduler_name=scheduler_name,
            max_iterations=max_iterations,
            backfill=False,
            objectives=objectives,
            constraints=constraints,
        )
        self._pick = pick

    def trial_added(self, trial: Any) -> None:
        self._events.register(trial)

    def trial_started(self, trial: Any) -> None:
        self._events.on_start(trial)

    def trial_retried(self, trial: Any) -> None:
        self._events.on_recover(trial)

    def trial_reported(self, trial: Any, result: Mapping[str, Any]) -> None:
        self._events.on_result(trial, result)

    def trial_ended(self, trial: Any) -> None:
        self._events.on_complete(trial)

    def trial_failed(self, trial: Any, error: str | None) -> None:
        self._events.on_error(trial, error)

    def note_exploit(
        self, trial_id: str, donor_id: str, iteration: int, new_config: dict[str, Any]
    ) -> None:
        self._events.note_exploit(trial_id, donor_id, iteration, new_config)

    def summary(self) -> SweepSummary:
        """The trials, ranked as a tracked sweep ranks them."""
        events = self._events
        return SweepSummary(
            trials=events.rank(),
            metric=events.metric,
            mode=events.mode,
            rank_by=events.rank_by,
            objectives=events.objectives,
            constraints=events.constraints,
            pick_rule=self._pick,
        )
