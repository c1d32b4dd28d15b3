"""Ranking of trials by their objective (or their Pareto front), and the records a sweep
summary is made of."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sweeplab.keys import STATUS_DIVERGED, STATUS_RUNNING
from sweeplab.pareto import (
    Constraint,
    Objective,
    pareto_order,
    parse_pick,
    point_of,
)
from sweeplab.pareto import hypervolume as dominated_volume

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
        rank: 1 for the best trial; set by :func:`rank_trials` or :func:`rank_pareto`.
        values: Of a multi-objective sweep: each objective's value at the trial's point, its
            last report that held every objective; ``None`` without such a report (and in a
            single-metric sweep).
        front: Of a multi-objective sweep: the trial's Pareto front among the feasible trials
            (1 = non-dominated); ``None`` for an infeasible trial or one without a point. Set
            by :func:`rank_pareto`.
        violation: How far the trial's values break the sweep's constraints (the sum of
            `Constraint.violation`; 0 = feasible, infinity when a constrained value is missing).
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
    values: dict[str, float] | None = None
    front: int | None = None
    violation: float = 0.0

    def value(self, rank_by: str) -> float | None:
        """The value this trial is ranked by."""
        return self.best_value if rank_by == "best" else self.last_value

    @property
    def has_point(self) -> bool:
        """Whether the trial has a point a Pareto ranking places: finite values, no divergence."""
        return (
            self.values is not None
            and self.status != STATUS_DIVERGED
            and all(math.isfinite(v) for v in self.values.values())
        )


@dataclass
class SweepSummary:
    """The ranked trials of one sweep execution (``trials[0]`` is the best).

    A multi-objective summary (several ``objectives``) fills in, when not given, the trial
    its pick rule picks (``picked``, also its ``best``) and the hypervolume of its front with
    the reference point (see :func:`front_hypervolume`).

    Attributes:
        objectives: The objectives of a multi-objective sweep; empty or one for a single metric.
        constraints: The constraints of a multi-objective sweep.
        hypervolume: The hypervolume of the feasible front 1, ``None`` without a point.
        reference_point: Its reference point, in the objectives' own units.
        picked: The trial the pick rule picks from front 1 (:func:`pick_trial`).
        pick_rule: The rule, such as ``"latency_ms <= 10, val_loss"``; ``None``: the first
            trial of the ranking.
    """

    trials: list[TrialRecord]
    metric: str
    mode: str
    rank_by: str
    parent_run_id: str | None = None
    tracking_uri: str | None = None
    objectives: tuple[Objective, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    hypervolume: float | None = None
    reference_point: tuple[float, ...] | None = None
    picked: TrialRecord | None = None
    pick_rule: str | None = None

    def __post_init__(self) -> None:
        if not self.multi_objective:
            return
        if self.hypervolume is None:
            self.hypervolume, self.reference_point = front_hypervolume(self.trials, self.objectives)
        if self.picked is None:
            self.picked = pick_trial(self.trials, self.pick_rule, self.objectives)

    @property
    def multi_objective(self) -> bool:
        """Whether the sweep ranked by several objectives."""
        return len(self.objectives) > 1

    @property
    def front(self) -> list[TrialRecord]:
        """The feasible front-1 trials, in ranking order (empty for a single metric)."""
        return [record for record in self.trials if record.front == 1]

    @property
    def best(self) -> TrialRecord | None:
        """The best trial, or ``None`` when no trial reported the metric without diverging.

        Of a multi-objective sweep: the picked trial.
        """
        if self.multi_objective:
            return self.picked
        if not self.trials or self.trials[0].status == STATUS_DIVERGED:
            return None
        value = self.trials[0].value(self.rank_by)
        return self.trials[0] if value is not None and math.isfinite(value) else None

    def value_of_best(self) -> float | None:
        """The best trial's value: of the metric by ``rank_by``, or of the first objective at
        the picked trial's point."""
        best = self.best
        if best is None:
            return None
        if self.multi_objective:
            return (best.values or {}).get(self.objectives[0].name)
        return best.value(self.rank_by)


def best_config_document(summary: SweepSummary, sweep: str) -> dict[str, Any]:
    """The best trial of a ranking, as ``best_config.json`` and the parent run hold it.

    Every key is present; without a best trial (no trial reported the metric) the trial's
    keys are ``None``. ``trials`` counts the ranked trials and ``diverged`` lists those that
    diverged, by rank, so that `sweeplab best` tells them without reading every trial.
    ``parent_run_id`` and ``tracking_uri`` are ``None`` for an untracked sweep. A
    multi-objective document also holds ``objectives``, ``constraints``, ``pick``
    (the rule), ``hypervolume`` with its ``reference_point``, and ``front`` (one entry per
    front-1 trial); its best trial is the picked one and ``value`` the picked trial's value
    of the first objective.
    """
    best = summary.best
    document: dict[str, Any] = {
        "sweep": sweep,
        "trial_id": best.trial_id if best else None,
        "metric": summary.metric,
        "mode": summary.mode,
        "rank_by": summary.rank_by,
        "value": summary.value_of_best(),
        "config": best.config if best else None,
        "checkpoint": best.best_checkpoint if best else None,
        "mlflow_run_id": best.run_id if best else None,
        "parent_run_id": summary.parent_run_id,
        "tracking_uri": summary.tracking_uri,
        "trials": len(summary.trials),
        "diverged": [r.trial_id for r in summary.trials if r.status == STATUS_DIVERGED],
    }
    if not summary.multi_objective:
        return document
    reference = summary.reference_point
    document.update(
        {
            "objectives": [{"name": o.name, "mode": o.mode} for o in summary.objectives],
            "constraints": [str(c) for c in summary.constraints],
            "pick": summary.pick_rule,
            "hypervolume": summary.hypervolume,
            "reference_point": list(reference) if reference is not None else None,
            "front": [
                {
                    "trial_id": record.trial_id,
                    "rank": record.rank,
                    "values": record.values,
                    "config": record.config,
                    "checkpoint": record.best_checkpoint,
                    "mlflow_run_id": record.run_id,
                }
                for record in summary.front
            ],
        }
    )
    return document


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


def _check_objectives(objectives: Sequence[Objective]) -> None:
    if not objectives:
        raise ValueError("`objectives` must name at least one objective, but got none.")
    for objective in objectives:
        if objective.mode not in MODES:
            raise ValueError(
                f"`mode` must be one of {MODES}, but got {objective.mode=!r} "
                f"for {objective.name!r}."
            )


def constraint_violation(
    values: dict[str, float] | None, constraints: Sequence[Constraint]
) -> float:
    """How far ``values`` break ``constraints`` (0: feasible; infinity: a value is missing)."""
    if not constraints:
        return 0.0
    if values is None:
        return math.inf
    return sum(c.violation(values.get(c.metric)) for c in constraints)


def rank_pareto(
    trials: Iterable[TrialRecord],
    objectives: Sequence[Objective],
    constraints: Sequence[Constraint] = (),
) -> list[TrialRecord]:
    """Ranks trials by Pareto front, by `sweeplab.pareto.pareto_order`'s documented rule.

    Feasible trials come first, by front (1 = non-dominated), within a front by the first
    objective, then the next, then by trial id; then the infeasible ones, by how far they break
    the constraints. Trials without a point (no report held every objective, or a value was not
    finite) come after them, by trial id, and diverged trials last, as in :func:`rank_trials`.
    Sets ``rank``, ``front`` and ``violation`` on each record and returns them in rank order.

    Args:
        trials: The records to rank (their ``values`` hold each objective's value).
        objectives: The sweep's objectives, the first one first.
        constraints: The sweep's constraints on the objectives' values.
    """
    _check_objectives(objectives)
    records = list(trials)
    placed = [r for r in records if r.has_point]
    others = sorted(
        (r for r in records if not r.has_point),
        key=lambda r: (r.status == STATUS_DIVERGED, r.trial_id),
    )
    for record in records:
        record.violation = constraint_violation(record.values, constraints)
        record.front = None
    order, fronts = pareto_order(
        [point_of(r.values or {}, objectives) for r in placed],
        violations=[r.violation for r in placed],
        ties=[r.trial_id for r in placed],
    )
    for record, front in zip(placed, fronts, strict=True):
        record.front = front
    ranked = [placed[i] for i in order] + others
    for position, record in enumerate(ranked, start=1):
        record.rank = position
    return ranked


def pick_trial(
    summary_or_ranked: SweepSummary | Sequence[TrialRecord],
    rule: str | None = None,
    objectives: Sequence[Objective] | None = None,
) -> TrialRecord | None:
    """The one trial a pick rule chooses from the front of a Pareto ranking.

    Without a rule: the first trial of the ranking, when it is on the feasible front 1. With
    ``"latency_ms <= 10, val_loss"``: the front-1 trials whose values keep every filter, then
    the best of them by the last objective named (ties: the earlier in the ranking).

    Args:
        summary_or_ranked: A summary, or trials ranked by :func:`rank_pareto`.
        rule: The pick rule (`sweeplab.pareto.parse_pick`); ``None`` for the default.
        objectives: The sweep's objectives; a summary's own by default.

    Returns:
        The picked trial, or ``None`` when no front-1 trial keeps the filters.

    Raises:
        ValueError: The rule does not parse for these objectives.
    """
    if isinstance(summary_or_ranked, SweepSummary):
        trials = summary_or_ranked.trials
        objectives = objectives if objectives is not None else summary_or_ranked.objectives
    else:
        trials = list(summary_or_ranked)
    if rule is None:
        return trials[0] if trials and trials[0].front == 1 else None
    filters, deciding = parse_pick(rule, tuple(objectives or ()))
    kept = [
        record
        for record in trials
        if record.front == 1 and all(c.holds((record.values or {}).get(c.metric)) for c in filters)
    ]
    if not kept:
        return None
    return min(kept, key=lambda record: deciding.signed((record.values or {})[deciding.name]))


def front_hypervolume(
    trials: Iterable[TrialRecord], objectives: Sequence[Objective]
) -> tuple[float | None, tuple[float, ...] | None]:
    """The hypervolume of the feasible front 1 and its reference point.

    The reference point is the worst value of each objective over the trials with a point
    (feasible or not), in the objectives' own units; a front-1 trial worst in some objective
    adds nothing. Both are ``None`` when no trial has a point.
    """
    records = [r for r in trials if r.has_point]
    if not records:
        return None, None
    points = [point_of(r.values or {}, objectives) for r in records]
    worst = tuple(max(column) for column in zip(*points, strict=True))
    front = [point for point, r in zip(points, records, strict=True) if r.front == 1]
    reference = tuple(o.signed(w) for o, w in zip(objectives, worst, strict=True))
    return dominated_volume(front, worst), reference
