"""Anytime curves of recorded sweeps and the budget each needs to reach a target (pandas only).

A sweep's budget is its reports: every point of the compared metric that any of its trials
logged, counted in the order they were logged (the MLflow timestamp, then the trial id, then
the step). The anytime curve is the best value reported so far after each of them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

NEVER = "never"
NO_TARGET = "n/a"
CURVE_COLUMNS = ["budget", "seconds", "trial_id", "step", "value", "best", "best_trial_id"]


def anytime_curve(history: pd.DataFrame, metric: str, mode: str) -> pd.DataFrame:
    """Every report of ``metric`` in a sweep's history, in the order they were logged.

    Args:
        history: A sweep's long history frame (``SweepData.history``: ``trial_id, metric, step,
            value, timestamp``).
        metric: The metric to follow.
        mode: ``"min"`` or ``"max"``: which values are better.

    Returns:
        One row per report: ``budget`` (1 for the first report, then 2, ...), ``seconds``
        since the sweep's first report, the report's ``trial_id``, ``step`` and ``value``,
        ``best`` (the best finite value reported so far; NaN before the first finite one: a NaN
        or infinite report spends budget and improves nothing) and ``best_trial_id`` (the trial
        that reported it first).
    """
    import numpy as np
    import pandas as pd

    reports = history[history["metric"] == metric]
    if reports.empty:
        return pd.DataFrame({c: pd.Series(dtype=_dtype(c)) for c in CURVE_COLUMNS})
    reports = reports.sort_values(["timestamp", "trial_id", "step"], kind="mergesort")
    values = reports["value"].astype(float).to_numpy()
    finite = np.where(np.isfinite(values), values, np.nan)
    best = pd.Series(finite)
    best = (best.cummin() if mode == "min" else best.cummax()).ffill()
    previous = best.shift(1)
    improved = best.notna() & (previous.isna() | (best != previous))
    trial_ids = pd.Series(reports["trial_id"].to_numpy(), dtype=object)
    timestamps = pd.to_datetime(reports["timestamp"]).reset_index(drop=True)
    return pd.DataFrame(
        {
            "budget": np.arange(1, len(reports) + 1),
            "seconds": (timestamps - timestamps.iloc[0]).dt.total_seconds(),
            "trial_id": trial_ids,
            "step": reports["step"].astype(int).to_numpy(),
            "value": values,
            "best": best.to_numpy(),
            "best_trial_id": trial_ids.where(improved).ffill(),
        }
    )


def _dtype(column: str) -> str:
    return {
        "budget": "int64",
        "step": "int64",
        "trial_id": "object",
        "best_trial_id": "object",
    }.get(column, "float64")


def final_best(curve: pd.DataFrame) -> float:
    """The best value the curve reached (its last ``best``); NaN if it has no finite report."""
    if curve.empty:
        return math.nan
    return float(curve["best"].iloc[-1])


def budget_to_reach(curve: pd.DataFrame, target: float, mode: str) -> int | None:
    """The budget (reports spent) at which the curve first reaches ``target``; None if never."""
    if math.isnan(target):
        return None
    best = curve["best"]
    hit = best.notna() & ((best <= target) if mode == "min" else (best >= target))
    if not hit.any():
        return None
    return int(curve["budget"][hit].iloc[0])


def budget_tables(
    curves: Mapping[str, pd.DataFrame], mode: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """How much budget each sweep needed to reach each sweep's final best.

    Rows are the sweeps whose budget is counted, columns the sweeps whose final best is the
    target (the diagonal: when a sweep reached its own final best).

    Returns:
        ``(fractions, reports)``: the reports a row's sweep spent until its best so far reached
        the column's final best, as a fraction of all its reports and as a count; ``"never"``
        when it did not reach it, ``"n/a"`` when the column's sweep has no finite value.
    """
    import pandas as pd

    labels = list(curves)
    fractions = pd.DataFrame(index=labels, columns=labels, dtype=object)
    reports = pd.DataFrame(index=labels, columns=labels, dtype=object)
    for target_label, target_curve in curves.items():
        target = final_best(target_curve)
        for label, curve in curves.items():
            if math.isnan(target):
                fractions.loc[label, target_label] = reports.loc[label, target_label] = NO_TARGET
                continue
            spent = budget_to_reach(curve, target, mode)
            if spent is None:
                fractions.loc[label, target_label] = reports.loc[label, target_label] = NEVER
            else:
                fractions.loc[label, target_label] = spent / len(curve)
                reports.loc[label, target_label] = spent
    fractions.index.name = reports.index.name = "sweep"
    fractions.columns.name = reports.columns.name = "target"
    return fractions, reports
