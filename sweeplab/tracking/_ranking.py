"""Ranking of trials by their objective, and the records a sweep summary is made of."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sweeplab.keys import STATUS_DIVERGED, STATUS_RUNNING

RANK_BY = ("best", "last")
MODES = ("min", "max")


@dataclass
class TrialRecord:
    """What sweeplab knows about one trial at the end of a sweep.

    Attributes:
        trial_id: Tune's trial id.
        run_id: The trial's MLflow child run id (``None`` when it was never created).
        status: ``finished``, ``stopped_early``, ``diverged`` (stopped at its first NaN or
            infinite value of the metric), ``errored`` or ``running``.
        config: The trial's nested config (secrets masked). For a trial whose config PBT
            changed, the config that was in effect at ``best_iteration``.
        best_value: Best reported value of the metric (by ``mode``), ``None`` if none.
        last_value: Last reported value of the metric, ``None`` if none.
        best_iteration: Iteration (1-based report index) of ``best_value``.
        iterations: Number of the last reported iteration.
        best_checkpoint: Checkpoint directory reported with the best value (or the last one
            when ranking by the last value), ``None`` if the trial reported none.
        restarts: How many times the trial was restarted after a failure.
        rank: 1 for the best trial; set by :func:`rank_trials`.
    """

    trial_id: str
    run_id: str | None = None
    status: str = STATUS_RUNNING
    config: dict[str, Any] = field(default_factory=dict)
    best_value: float | None = None
    last_value: float | None = None
    best_iteration: int | None = None
    iterations: int = 0
    best_checkpoint: str | None = None
    restarts: int = 0
    rank: int | None = None

    def value(self, rank_by: str) -> float | None:
        """The value this trial is ranked by."""
        return self.best_value if rank_by == "best" else self.last_value


@dataclass
class SweepSummary:
    """The ranked trials of one sweep execution (``trials[0]`` is the best)."""

    trials: list[TrialRecord]
    metric: str
    mode: str
    rank_by: str
    parent_run_id: str | None = None
    tracking_uri: str | None = None

    @property
    def best(self) -> TrialRecord | None:
        """The best trial, or ``None`` when no trial reported the metric without diverging."""
        if not self.trials or self.trials[0].status == STATUS_DIVERGED:
            return None
        value = self.trials[0].value(self.rank_by)
        return self.trials[0] if value is not None and math.isfinite(value) else None


def best_config_document(summary: SweepSummary, sweep: str) -> dict[str, Any]:
    """The best trial of a ranking, as ``best_config.json`` and the parent run hold it.

    Every key is present; without a best trial (no trial reported the metric) the trial's
    keys are ``None``. ``parent_run_id`` and ``tracking_uri`` are ``None`` for an untracked
    sweep.
    """
    best = summary.best
    return {
        "sweep": sweep,
        "trial_id": best.trial_id if best else None,
        "metric": summary.metric,
        "mode": summary.mode,
        "rank_by": summary.rank_by,
        "value": best.value(summary.rank_by) if best else None,
        "config": best.config if best else None,
        "checkpoint": best.best_checkpoint if best else None,
        "mlflow_run_id": best.run_id if best else None,
        "parent_run_id": summary.parent_run_id,
        "tracking_uri": summary.tracking_uri,
    }


def _check(mode: str, rank_by: str) -> None:
    if mode not in MODES:
        raise ValueError(f"`mode` must be one of {MODES}, but got {mode=!r}.")
    if rank_by not in RANK_BY:
        raise ValueError(f"`rank_by` must be one of {RANK_BY}, but got {rank_by=!r}.")


def rank_trials(
    trials: Iterable[TrialRecord], metric: str, mode: str, rank_by: str = "best"
) -> list[TrialRecord]:
    """Ranks trials by the best (or last) reported value of ``metric``.

    Trials without a finite value rank after those with one, and diverged trials (status
    ``diverged``) after all others, whatever they reported before diverging. Ties are broken
    by the earlier iteration at which the value was reached, then by trial id, so the order is
    deterministic. Sets ``rank`` (1 = best) on each record and returns them in rank order.

    Args:
        trials: The records to rank.
        metric: Name of the metric (only used in error messages; the values are on the records).
        mode: ``"min"`` or ``"max"``.
        rank_by: ``"best"`` or ``"last"``.
    """
    _check(mode, rank_by)
    sign = 1.0 if mode == "min" else -1.0

    def key(record: TrialRecord) -> tuple[int, float, float, str]:
        value = record.value(rank_by)
        if record.status == STATUS_DIVERGED:
            return (2, 0.0, math.inf, record.trial_id)
        if value is None or not math.isfinite(value):
            return (1, 0.0, math.inf, record.trial_id)
        reached = record.best_iteration if rank_by == "best" else record.iterations
        return (0, sign * value, float(reached or 0), record.trial_id)

    ranked = sorted(trials, key=key)
    for position, record in enumerate(ranked, start=1):
        record.rank = position
    return ranked
