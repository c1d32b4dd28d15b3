"""Ranking an untracked sweep from Tune's own record of its trials (no MLflow)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweeplab.tracking._ranking import SweepSummary, rank_trials
from sweeplab.tracking._trials import TrialEvents

__all__ = ["rank_tune_results"]


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
    """
    events = TrialEvents(
        metric=metric,
        mode=mode,
        rank_by=rank_by,
        config_decoder=config_decoder,
        scheduler_name="",
        max_iterations=max_iterations,
        backfill=True,
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
        trials=rank_trials(events.records(), metric, mode, rank_by),
        metric=metric,
        mode=mode,
        rank_by=rank_by,
    )
