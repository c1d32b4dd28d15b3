"""A sweep read at a rung: each trial's value at one step, its best so far or its last value.

Under ASHA most trials stop at the first rung, so the values of a sweep's trials are values at
different budgets. BOHB's rule, which sweeplab's Optuna searcher applies
(``OptunaSearcher(rung_rule=True)``), compares trials at one step: the highest step that
enough ended trials reported. The report and the notebook read the sweep there by default,
and at the other rungs, or by each trial's best or last value, on request.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from sweeplab.keys import STATUS_DIVERGED, STATUS_FINISHED, STATUS_STOPPED_EARLY
from sweeplab.report._study import _build, _curves, _direction, _objective, _records
from sweeplab.report._table import CONFIG_PREFIX
from sweeplab.space import rung_min_points

if TYPE_CHECKING:
    import optuna

    from sweeplab.space import Space
    from sweeplab.tracking import SweepData

BEST = "best"  # each trial's best value so far (by the objective's mode)
LAST = "last"  # each trial's last reported value
BY_VALUE = (BEST, LAST)
# The rungs the report offers: more would crowd the buttons (a median rule stops at any step).
MAX_RUNGS = 8
# Ended trials, as the searcher counts them for its rung rule (COMPLETE or PRUNED there).
_ENDED = (STATUS_FINISHED, STATUS_STOPPED_EARLY)


def _ended(data: SweepData) -> list[str]:
    """The ids of the trials that ended (``finished`` or ``stopped_early``)."""
    trials = data.trials
    return [str(t) for t in trials.loc[trials["status"].isin(_ENDED), "trial_id"]]


def _dimensions(data: SweepData, space: Space | None) -> int:
    if space is not None:
        return space.dimensions
    return sum(c.startswith(CONFIG_PREFIX) for c in data.trials.columns)


def default_rung(
    data: SweepData, *, objective: str | None = None, space: Space | None = None
) -> int | None:
    """The step a sweep is read at by default: the highest that enough ended trials reported.

    "Enough" is :func:`rung_min_points` of the sweep's trial count and its space's parameters
    (the searcher's rule), or every ended trial when the sweep has fewer. Ended trials are the
    ``finished`` and ``stopped_early`` ones, as the searcher counts them. ``None`` when no ended
    trial reported the objective.

    Args:
        data: The sweep (`sweeplab.load_sweep`).
        objective: The objective's name; ``None``: the sweep's metric (its first objective).
        space: The sweep's search space (`read_space`); ``None``: its params are counted from
            the trials.
    """
    name, _ = _objective(data, objective)
    if data.trials.empty:
        return None
    return _default_from(data, _curves(data, name), space)


def _default_from(
    data: SweepData, curves: dict[str, dict[int, float]], space: Space | None
) -> int | None:
    """:func:`default_rung` of the objective's curves (``_curves``), read once by the caller."""
    if data.trials.empty:
        return None
    ended = _ended(data)
    counts: Counter[int] = Counter()
    for trial_id in ended:
        counts.update(curves.get(trial_id, {}).keys())
    if not counts:
        return None
    enough = min(rung_min_points(len(data.trials), _dimensions(data, space)), len(ended))
    return max(step for step, n in counts.items() if n >= enough)


def sweep_rungs(
    data: SweepData, *, objective: str | None = None, space: Space | None = None
) -> list[int]:
    """The steps the report offers to read a sweep at: the scheduler's rungs.

    The steps where an ended trial stopped (its last report), and the :func:`default_rung`;
    of more than ``MAX_RUNGS``, the lowest, the highest, the default and evenly spread ones.
    """
    name, _ = _objective(data, objective)
    curves = _curves(data, name)
    return _rungs_from(data, curves, _default_from(data, curves, space))


def _rungs_from(
    data: SweepData, curves: dict[str, dict[int, float]], default: int | None
) -> list[int]:
    """:func:`sweep_rungs` of the objective's curves and its default rung."""
    if default is None:
        return []
    ended = _ended(data)
    stops = sorted({max(curves[t]) for t in ended if curves.get(t)} | {default})
    if len(stops) <= MAX_RUNGS:
        return stops
    picks = {stops[round(i * (len(stops) - 1) / (MAX_RUNGS - 2))] for i in range(MAX_RUNGS - 1)}
    return sorted(picks | {default})


def _check_rung(rung: int | str | None) -> None:
    if rung is None or rung in BY_VALUE:
        return
    if isinstance(rung, bool) or not isinstance(rung, int) or rung < 1:
        raise ValueError(
            f"`rung` must be a step >= 1, {BEST!r}, {LAST!r} or None, but got {rung=!r}."
        )


def _value_at(
    rung: int | str, steps: dict[int, float], status: str, mode: str
) -> tuple[str, float | None, dict[int, float]]:
    """A trial's state, value and intermediate values in the view at ``rung``."""
    if rung == BEST and steps:
        pick = min if mode == "min" else max
        return "COMPLETE", pick(steps.values()), steps
    if rung == LAST and steps and status != STATUS_DIVERGED:
        return "COMPLETE", steps[max(steps)], steps
    if isinstance(rung, int) and rung in steps:
        return "COMPLETE", steps[rung], {s: v for s, v in steps.items() if s <= rung}
    if isinstance(rung, int) and steps and max(steps) < rung:
        return "PRUNED", None, steps  # it ended before the rung
    return "FAIL", None, steps


def rung_study(
    data: SweepData,
    rung: int | str | None = None,
    *,
    objective: str | None = None,
    space: Space | None = None,
) -> optuna.Study:
    """An in-memory Optuna study of a sweep read at one step, or by best or last value.

    Every trial of the sweep, with its params, distributions and user attrs as in
    :func:`sweep_study`, and its state and value in this view:

    - ``rung`` a step: a trial that reported it is COMPLETE with its value there (its
      intermediate values up to it), whatever its status; one that ended before it is PRUNED
      (its intermediate values hold where it got); any other is FAIL.
    - ``"best"``: each trial with a finite value is COMPLETE with its best one (by the
      objective's mode).
    - ``"last"``: each trial with a finite value is COMPLETE with its last one; a diverged
      trial, whose last value was not finite, is FAIL.
    - ``None``: at :func:`default_rung`, or by last value when there is none.

    Optuna's figures and :func:`parameter_importance` of it read the sweep in that view.

    Args:
        data: The sweep (`sweeplab.load_sweep`).
        rung: The view (see above).
        objective: The objective's name; ``None``: the sweep's metric (its first objective).
        space: The sweep's search space (see :func:`sweep_study`).

    Raises:
        ValueError: ``rung`` is not a step >= 1, ``"best"``, ``"last"`` or ``None``, or
            ``objective`` is not one of the sweep's.
    """
    _check_rung(rung)
    name, mode = _objective(data, objective)
    if rung is None:
        rung = default_rung(data, objective=name, space=space) or LAST
    view = rung
    curves = _curves(data, name)
    fronts: dict[str, int | None] = {}
    if len(data.objectives) > 1:
        fronts = {t: r.front for t, r in _records(data).items()}

    def trial_of(trial_id: str, status: str) -> tuple[str, list[float] | None, dict[str, Any]]:
        state, value, steps = _value_at(view, curves.get(trial_id, {}), status, mode)
        extra: dict[str, Any] = {"intermediate_values": steps, "user_attrs": {"view": view}}
        if fronts:
            extra["user_attrs"]["front"] = fronts.get(trial_id)
        return state, None if value is None else [value], extra

    return _build(data, space, [_direction(mode)], trial_of)
