"""An in-memory Optuna study built from what MLflow holds about a sweep, for Optuna's plots."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sweeplab.keys import STATUS_DIVERGED, STATUS_FINISHED, STATUS_STOPPED_EARLY
from sweeplab.report._space import (
    _as_choice,
    _contains,
    _merge,
    _observed,
    space_distributions,
)
from sweeplab.report._table import CONFIG_PREFIX, objective, param_frame

if TYPE_CHECKING:
    import optuna
    from optuna.distributions import BaseDistribution

    from sweeplab.space import Space
    from sweeplab.tracking import SweepData, TrialRecord

# sweeplab's trial status -> Optuna's trial state. A trial that a scheduler stopped is PRUNED,
# as Optuna's own pruners leave it; one still `running` when its sweep ended was killed.
# A diverged trial (NaN or infinite metric) is FAIL, as sweeplab's searchers learn it.
_STATES = {STATUS_FINISHED: "COMPLETE", STATUS_STOPPED_EARLY: "PRUNED", STATUS_DIVERGED: "FAIL"}


def _last_config_values(data: SweepData) -> dict[str, dict[str, float]]:
    """Per trial, the last value of each numeric param that PBT changed (metric ``config.*``)."""
    history = data.history
    if history.empty:
        return {}
    changed = history[history["metric"].str.startswith(CONFIG_PREFIX)]
    last: dict[str, dict[str, float]] = {}
    for row in changed.sort_values("step").itertuples():
        name = str(row.metric)[len(CONFIG_PREFIX) :]
        last.setdefault(str(row.trial_id), {})[name] = float(row.value)
    return last


def _multi_objective(data: SweepData) -> bool:
    return len(data.objectives) > 1


def _records(data: SweepData) -> dict[str, TrialRecord]:
    """The ranked records of a multi-objective sweep (its summary), by trial id."""
    if data.summary is None or not data.summary.multi_objective:
        raise ValueError(
            f"a multi-objective sweep needs its ranked summary, but {data.name!r} has none "
            "(load it with `sweeplab.load_sweep`)."
        )
    return {record.trial_id: record for record in data.summary.trials}


def _params(
    data: SweepData, space: Space | None
) -> tuple[dict[str, dict[str, Any]], dict[str, BaseDistribution]]:
    """Each trial's params (by trial id) and the distributions that hold them."""
    trials = data.trials
    params = param_frame(data)
    pbt_values = _last_config_values(data)
    rows: dict[str, dict[str, Any]] = {}
    # Whole columns, not a row at a time: pandas' per-row access cost seconds a 1,000 trials.
    for trial_id, row in zip(trials["trial_id"], params.to_dict("records"), strict=True):
        values = {k: _plain(v) for k, v in row.items() if not _missing(v)}
        values.update(pbt_values.get(str(trial_id), {}))
        rows[str(trial_id)] = values

    distributions = space_distributions(space) if space is not None else {}
    observed: dict[str, list[Any]] = {}
    for values in rows.values():
        for name, value in values.items():
            observed.setdefault(name, []).append(value)
    for name, seen in observed.items():
        if name not in distributions:
            if space is None or len({str(v) for v in seen}) > 1:
                distributions[name] = _observed(seen)
            continue
        for value in seen:
            value = _as_choice(distributions[name], value)
            if not _contains(distributions[name], value):
                distributions[name] = _merge(distributions[name], _observed([value]))
    return rows, distributions


def _curves(data: SweepData, metric: str) -> dict[str, dict[int, float]]:
    """Each trial's first value of ``metric`` at each reported step (finite values only)."""
    import numpy as np

    curves: dict[str, dict[int, float]] = {}
    if data.history.empty:
        return curves
    history = data.history
    points = history[(history["metric"] == metric) & np.isfinite(history["value"].astype(float))]
    # Whole columns, not a row at a time: a 10,000-trial sweep has some 50,000 points.
    points = points.drop_duplicates(["trial_id", "step"], keep="first")
    for trial_id, step, value in zip(
        points["trial_id"].astype(str).tolist(),
        points["step"].astype(int).tolist(),
        points["value"].astype(float).tolist(),
        strict=True,
    ):
        curves.setdefault(trial_id, {})[step] = value
    return curves


@dataclass(frozen=True)
class TrialRow:
    """One trial as every study and view of a sweep holds it: its ids, status and params."""

    trial_id: str
    status: str
    rank: int | None
    run_id: str
    params: dict[str, Any]  # by dotted name, each a value of its distribution


def trial_rows(
    data: SweepData, space: Space | None
) -> tuple[list[TrialRow], dict[str, BaseDistribution]]:
    """The sweep's trials in the order of Tune's trial ids, and the params' distributions (see
    :func:`sweep_study`)."""
    trials = data.trials
    if trials.empty:
        return [], {}
    rows, distributions = _params(data, space)
    columns = zip(
        trials["trial_id"].astype(str),
        trials["status"].astype(str),
        trials["rank"],
        trials["run_id"].astype(str),
        strict=True,
    )
    ordered = []
    for trial_id, status, rank, run_id in sorted(columns, key=lambda row: row[0]):
        params = {
            n: _as_choice(distributions[n], v)
            for n, v in rows[trial_id].items()
            if n in distributions
        }
        ordered.append(
            TrialRow(trial_id, status, None if _missing(rank) else int(rank), run_id, params)
        )
    return ordered, distributions


def _build(
    data: SweepData,
    space: Space | None,
    directions: list[str],
    trial_of: Callable[[str, str], tuple[str, list[float] | None, dict[str, Any]]],
) -> optuna.Study:
    """A study with one trial per sweeplab trial, in the order of Tune's trial ids.

    ``trial_of(trial_id, status)`` gives the trial's Optuna state name, its values (or
    ``None``) and the rest of ``create_trial``'s arguments.
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(directions=directions)
    rows, distributions = trial_rows(data, space)
    for row in rows:
        state, values, extra = trial_of(row.trial_id, row.status)
        study.add_trial(
            optuna.trial.create_trial(
                state=optuna.trial.TrialState[state],
                values=values if state == "COMPLETE" else None,
                params=row.params,
                distributions={n: distributions[n] for n in row.params},
                user_attrs={
                    "trial_id": row.trial_id,
                    "rank": row.rank,
                    "status": row.status,
                    "run_id": row.run_id,
                    **extra.pop("user_attrs", {}),
                },
                **extra,
            )
        )
    return study


def _objective(data: SweepData, objective: str | None) -> tuple[str, str]:
    """The objective's name and mode (``None``: the sweep's metric, or its first objective)."""
    names = {o.name: o.mode for o in data.objectives} or {data.metric: data.mode}
    name = next(iter(names)) if objective is None else objective
    if name not in names:
        raise ValueError(f"`objective` must be one of {list(names)}, but got {objective=!r}.")
    return name, names[name]


def _direction(mode: str) -> str:
    return "maximize" if mode == "max" else "minimize"


def sweep_study(data: SweepData, *, space: Space | None = None) -> optuna.Study:
    """An in-memory Optuna study holding every trial of a recorded sweep.

    Each sweeplab trial becomes one Optuna trial, numbered in the order of Tune's trial ids
    (the order Tune created them), with:

    - **params**: its config params by their dotted MLflow names (``optimizer.momentum``); a
      param of a conditional branch the trial did not take is absent. Constants of the space
      are left out. For a PBT trial, the config in effect at its end (its last config): each
      numeric param PBT changed takes its last logged value.
    - **distributions**: compiled from ``space`` as :func:`sweeplab.space.compile_to_optuna`
      does (so ``loguniform`` is ``log=True``); a param the space does not name, or every param
      when ``space`` is ``None``, gets one over its observed values (linear).
      A value outside its distribution (a warm-start config, an older space) widens it.
    - **state**: ``finished`` -> COMPLETE with its ranked value (best, or last when the sweep
      ranks by the last value); ``stopped_early`` -> PRUNED (no value, as Optuna's pruners
      leave a trial); ``diverged``, ``errored`` and a trial still ``running`` when the sweep
      ended -> FAIL.
    - **intermediate values**: the metric at each reported step.
    - **user attrs**: ``trial_id``, ``rank``, ``status``, ``run_id``.

    Of a multi-objective sweep (several ``data.objectives``), a multi-objective study instead,
    as the sweep ranked its trials: ``directions`` from the objectives' modes; a trial with a
    point (see `sweeplab.tracking.TrialRecord.values`), stopped early or not, is COMPLETE with
    its point as values, and one constraint value per sweep constraint (its
    `~sweeplab.pareto.Constraint.violation`: 0 when it holds, Optuna's convention), so
    ``plot_pareto_front`` greys the infeasible ones; a trial without a point is PRUNED when it
    was stopped early, else FAIL. No intermediate values (see :func:`objective_study` for each
    objective's curves); the user attrs add ``front`` (``None`` when infeasible or without a
    point).

    Raises:
        ValueError: A multi-objective ``data`` without its ranked ``summary``.
    """
    if _multi_objective(data):
        return _pareto_study(data, space)
    curves = _curves(data, data.metric)
    values_of = objective(data)
    value_by_id = {
        str(data.trials.at[i, "trial_id"]): float(values_of[i]) for i in data.trials.index
    }

    def trial_of(trial_id: str, status: str) -> tuple[str, list[float] | None, dict[str, Any]]:
        value = value_by_id[trial_id]
        state = _STATES.get(status, "FAIL")
        if state == "COMPLETE" and math.isnan(value):
            state = "FAIL"
        return state, [value], {"intermediate_values": curves.get(trial_id, {})}

    return _build(data, space, [_direction(data.mode)], trial_of)


def _point_state(record: TrialRecord | None, status: str) -> str:
    """A multi-objective trial's state: COMPLETE with a point, else PRUNED or FAIL."""
    if record is not None and record.has_point:
        return "COMPLETE"
    return "PRUNED" if status == STATUS_STOPPED_EARLY else "FAIL"


def _constraint_values(data: SweepData, values: Mapping[str, float]) -> dict[str, float]:
    return {str(c): c.violation(values.get(c.metric)) for c in data.constraints}


def _pareto_study(data: SweepData, space: Space | None) -> optuna.Study:
    import optuna

    records = _records(data)
    objectives = data.objectives

    def trial_of(trial_id: str, status: str) -> tuple[str, list[float] | None, dict[str, Any]]:
        record = records.get(trial_id)
        state = _point_state(record, status)
        if record is None or state != "COMPLETE":
            return state, None, {"user_attrs": {"front": None}}
        values = record.values or {}
        extra: dict[str, Any] = {"user_attrs": {"front": record.front}}
        if data.constraints:
            extra["constraints"] = _constraint_values(data, values)
        return state, [float(values[o.name]) for o in objectives], extra

    study = _build(data, space, [_direction(o.mode) for o in objectives], trial_of)
    with warnings.catch_warnings():
        # Experimental since Optuna 3.2, unchanged since; it names the axes of Optuna's plots.
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names([o.name for o in objectives])
    return study


def objective_study(
    data: SweepData, objective: str | None = None, *, space: Space | None = None
) -> optuna.Study:
    """A single-objective study of one objective of a sweep, for that objective's views.

    Of a multi-objective sweep: as :func:`sweep_study`'s multi-objective study (same trials,
    states, params and constraints), with the objective's value at each trial's point as its
    value, its direction, and the objective's reported values as intermediate values. Of a
    single-metric sweep, :func:`sweep_study` itself.

    Args:
        data: The sweep (`sweeplab.load_sweep`).
        objective: The objective's metric name; ``None``: the first objective.
        space: The sweep's search space (see :func:`sweep_study`).

    Raises:
        ValueError: ``objective`` is not one of the sweep's objectives.
    """
    name, mode = _objective(data, objective)
    if not _multi_objective(data):
        return sweep_study(data, space=space)
    records = _records(data)
    curves = _curves(data, name)

    def trial_of(trial_id: str, status: str) -> tuple[str, list[float] | None, dict[str, Any]]:
        record = records.get(trial_id)
        state = _point_state(record, status)
        extra: dict[str, Any] = {
            "intermediate_values": curves.get(trial_id, {}),
            "user_attrs": {"front": record.front if record is not None else None},
        }
        if record is None or state != "COMPLETE":
            return state, None, extra
        values = record.values or {}
        if data.constraints:
            extra["constraints"] = _constraint_values(data, values)
        return state, [float(values[name])], extra

    return _build(data, space, [_direction(mode)], trial_of)


def _missing(value: Any) -> bool:
    import pandas as pd

    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _plain(value: Any) -> Any:
    """A numpy/pandas scalar as the Python value Optuna's distributions expect."""
    return value.item() if hasattr(value, "item") else value
