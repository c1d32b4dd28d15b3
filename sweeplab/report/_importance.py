"""Parameter importance by Optuna's fANOVA over the finished trials of a sweep."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sweeplab.report._table import FINISHED, objective, param_frame

if TYPE_CHECKING:
    import pandas as pd

    from sweeplab.tracking import SweepData


def _distribution(values: pd.Series) -> Any:
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    kind = str(values.dtype)
    if kind == "Int64":
        return IntDistribution(int(values.min()), int(values.max()))
    if kind.startswith("float"):
        return FloatDistribution(float(values.min()), float(values.max()))
    return CategoricalDistribution(sorted(set(values), key=str))


def parameter_importance(data: SweepData) -> pd.Series:
    """Each config param's share of the metric's variance, by fANOVA (Optuna's evaluator).

    Only finished trials count (status ``finished`` or ``stopped_early``, with a value): each
    becomes an Optuna trial with its ranked value (best, or last when the sweep ranks by the
    last value). Distributions come from the observed values: floats a ``FloatDistribution``
    over their min/max, ints an ``IntDistribution``, strings and booleans a
    ``CategoricalDistribution``. fANOVA needs every param in every trial, so a conditional
    param (set only on one branch, e.g. ``optimizer.momentum``) is left out; the branch choice
    itself (``optimizer.name``) is always present and carries that branch's effect. Params with
    a single observed value are left out too.

    Returns:
        Importances summing to 1, largest first, named ``importance``. Empty, with the reason
        in ``.attrs["note"]``, when fewer than 2 trials finished or no param varies.
    """
    import optuna
    import pandas as pd
    from optuna.importance import FanovaImportanceEvaluator

    result = pd.Series(dtype=float, name="importance")
    if data.trials.empty:
        result.attrs["note"] = "no trials recorded"
        return result
    values = objective(data)
    finished = data.trials["status"].isin(FINISHED).to_numpy() & values.notna().to_numpy()
    params = param_frame(data)[finished]
    values = values[finished]
    if len(values) < 2:
        result.attrs["note"] = f"{len(values)} finished trial(s); importance needs at least 2"
        return result
    complete = params.dropna(axis=1)
    varying = [c for c in complete.columns if complete[c].nunique() > 1]
    if not varying:
        result.attrs["note"] = "no param varies across the finished trials"
        return result
    distributions = {name: _distribution(complete[name]) for name in varying}
    direction = "maximize" if data.mode == "max" else "minimize"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction=direction)
    for (_, row), value in zip(complete[varying].iterrows(), values, strict=True):
        study.add_trial(
            optuna.trial.create_trial(
                params={name: _plain(row[name]) for name in varying},
                distributions=distributions,
                value=float(value),
            )
        )
    importances = optuna.importance.get_param_importances(
        study, evaluator=FanovaImportanceEvaluator(seed=0)
    )
    result = pd.Series(importances, dtype=float, name="importance").sort_values(ascending=False)
    dropped = sorted(set(params.columns) - set(complete.columns))
    if dropped:
        result.attrs["note"] = "conditional params left out: " + ", ".join(dropped)
    return result


def _plain(value: Any) -> Any:
    """A numpy/pandas scalar as the Python value Optuna's distributions expect."""
    return value.item() if hasattr(value, "item") else value
