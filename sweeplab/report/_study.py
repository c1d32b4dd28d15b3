"""An in-memory Optuna study built from what MLflow holds about a sweep, for Optuna's plots."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeplab.keys import STATUS_DIVERGED, STATUS_FINISHED, STATUS_STOPPED_EARLY
from sweeplab.report._table import CONFIG_PREFIX, objective, param_frame

if TYPE_CHECKING:
    import optuna
    from optuna.distributions import BaseDistribution

    from sweeplab.space import Space
    from sweeplab.tracking import SweepData

SPACE_ARTIFACT = "spec/space.yaml"

# sweeplab's trial status -> Optuna's trial state. A trial that a scheduler stopped is PRUNED,
# as Optuna's own pruners leave it; one still `running` when its sweep ended was killed.
# A diverged trial (NaN or infinite metric) is FAIL, as sweeplab's searchers learn it.
_STATES = {STATUS_FINISHED: "COMPLETE", STATUS_STOPPED_EARLY: "PRUNED", STATUS_DIVERGED: "FAIL"}


def read_space(data: SweepData, *, tracking_uri: str | None = None) -> Space | None:
    """The search space a sweep logged (its parent run's ``spec/space.yaml``), or ``None``."""
    from sweeplab.space import load_space
    from sweeplab.tracking import tracking_client

    client, _ = tracking_client(tracking_uri)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            path = client.download_artifacts(data.parent_run_id, SPACE_ARTIFACT, tmp)
        except Exception:  # an older sweep, or a store without artifacts: infer from values
            return None
        return load_space(Path(path))


class _RangeRecorder:
    """Stands in for an ``optuna.Trial``: returns the distribution a suggestion would use, so
    the distributions are exactly those of :func:`sweeplab.space.compile_to_optuna`."""

    def suggest_float(
        self, name: str, low: float, high: float, *, step: float | None = None, log: bool = False
    ) -> BaseDistribution:
        from optuna.distributions import FloatDistribution

        return FloatDistribution(low, high, step=step, log=log)

    def suggest_int(
        self, name: str, low: int, high: int, *, step: int = 1, log: bool = False
    ) -> BaseDistribution:
        from optuna.distributions import IntDistribution

        return IntDistribution(low, high, step=step, log=log)


def space_distributions(space: Space) -> dict[str, BaseDistribution]:
    """One Optuna distribution per param of ``space``, named as MLflow logs it (dotted).

    Ranges and choices compile as :func:`~sweeplab.space.compile_to_optuna` suggests them
    (``loguniform`` -> ``FloatDistribution(log=True)``). A conditional choice at ``optimizer``
    gives ``optimizer.name`` (the branch) and each branch's params (``optimizer.momentum``);
    a name that two branches share gets one distribution that covers both.
    """
    from optuna.distributions import CategoricalDistribution

    from sweeplab.space import Choice, Conditional, FloatRange, IntRange, optuna_distribution

    found: dict[str, BaseDistribution] = {}

    def add(name: str, distribution: BaseDistribution) -> None:
        found[name] = _merge(found[name], distribution) if name in found else distribution

    def walk(tree: Mapping[str, Any], prefix: str) -> None:
        for key, param in tree.items():
            name = f"{prefix}{key}"
            if isinstance(param, dict):
                walk(param, f"{name}.")
            elif isinstance(param, (FloatRange, IntRange, Choice)):
                add(name, optuna_distribution(param))
            elif isinstance(param, Conditional):
                add(f"{name}.name", CategoricalDistribution(list(param.branches)))
                for branch in param.branches.values():
                    walk(branch, f"{name}.")

    walk(space.params, "")
    return found


def _merge(a: BaseDistribution, b: BaseDistribution) -> BaseDistribution:
    """The smallest distribution of a's kind that holds both a and b."""
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    if a == b:
        return a
    if isinstance(a, CategoricalDistribution) or isinstance(b, CategoricalDistribution):
        choices = [*_choices(a), *(c for c in _choices(b) if c not in _choices(a))]
        return CategoricalDistribution(choices)
    low = min(a.low, b.low)
    high = max(a.high, b.high)
    log = a.log and b.log and low > 0
    if isinstance(a, IntDistribution) and isinstance(b, IntDistribution):
        return IntDistribution(int(low), int(high), log=log)
    return FloatDistribution(float(low), float(high), log=log)


def _choices(distribution: BaseDistribution) -> list[Any]:
    from optuna.distributions import CategoricalDistribution

    if isinstance(distribution, CategoricalDistribution):
        return list(distribution.choices)
    return [distribution.low, distribution.high]


def _observed(values: list[Any]) -> BaseDistribution:
    """A distribution over observed values, for a param the logged space does not name."""
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return IntDistribution(min(values), max(values))
    if values and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return FloatDistribution(float(min(values)), float(max(values)))
    return CategoricalDistribution(sorted(set(values), key=str))


def _as_choice(distribution: BaseDistribution, value: Any) -> Any:
    """The categorical label that an MLflow param (a string, typed back) stands for."""
    from optuna.distributions import CategoricalDistribution

    if not isinstance(distribution, CategoricalDistribution):
        return value
    for choice in distribution.choices:
        if choice == value and type(choice) is type(value):
            return choice
    for choice in distribution.choices:
        if str(choice) == str(value):
            return choice
    return value


def _contains(distribution: BaseDistribution, value: Any) -> bool:
    from optuna.distributions import CategoricalDistribution

    if isinstance(distribution, CategoricalDistribution):
        return value in distribution.choices
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    low, high = distribution.low, distribution.high
    step = getattr(distribution, "step", None)
    on_grid = step is None or math.isclose(
        (value - low) / step, round((value - low) / step), abs_tol=1e-8
    )
    return bool(low <= value <= high and on_grid)


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
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize" if data.mode == "max" else "minimize")
    trials = data.trials
    if trials.empty:
        return study
    params = param_frame(data)
    pbt_values = _last_config_values(data)
    rows: dict[str, dict[str, Any]] = {}
    for index, trial_id in trials["trial_id"].items():
        values = {k: _plain(v) for k, v in params.loc[index].items() if not _missing(v)}
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

    curves = data.history[data.history["metric"] == data.metric] if not data.history.empty else None
    values_of = objective(data)
    for index in sorted(trials.index, key=lambda i: str(trials.at[i, "trial_id"])):
        trial_id = str(trials.at[index, "trial_id"])
        status = str(trials.at[index, "status"])
        value = float(values_of[index])
        state = _STATES.get(status, "FAIL")
        if state == "COMPLETE" and math.isnan(value):
            state = "FAIL"
        intermediate: dict[int, float] = {}
        if curves is not None:
            for point in curves[curves["trial_id"] == trial_id].itertuples():
                if not math.isnan(point.value):
                    intermediate.setdefault(int(point.step), float(point.value))
        chosen = {n: v for n, v in rows[trial_id].items() if n in distributions}
        rank = trials.at[index, "rank"]
        study.add_trial(
            optuna.trial.create_trial(
                state=optuna.trial.TrialState[state],
                value=value if state == "COMPLETE" else None,
                params={n: _as_choice(distributions[n], v) for n, v in chosen.items()},
                distributions={n: distributions[n] for n in chosen},
                intermediate_values=intermediate,
                user_attrs={
                    "trial_id": trial_id,
                    "rank": None if _missing(rank) else int(rank),
                    "status": status,
                    "run_id": str(trials.at[index, "run_id"]),
                },
            )
        )
    return study


def _missing(value: Any) -> bool:
    import pandas as pd

    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _plain(value: Any) -> Any:
    """A numpy/pandas scalar as the Python value Optuna's distributions expect."""
    return value.item() if hasattr(value, "item") else value
