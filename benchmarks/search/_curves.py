"""Anytime curves and the headline figure, from a sweep's reports (no Ray, no plotting).

A sweep's reports are ``(seconds since the sweep started, score)`` in time order, one per
iteration trained; lower scores are better. Budget consumed after the k-th report is k.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = [
    "anytime",
    "best_at",
    "budget_to_reach",
    "fraction_to_reach",
    "percentile",
    "summarize",
]

Report = tuple[float, float]


def anytime(reports: Sequence[Report], budget: int) -> list[tuple[int, float, float]]:
    """The best score so far at each improvement, within the first ``budget`` reports.

    Returns ``(budget consumed, seconds, best so far)`` for each report that improved on
    every earlier one: the steps of the anytime curve.
    """
    steps: list[tuple[int, float, float]] = []
    best = math.inf
    for index, (seconds, score) in enumerate(reports[:budget], start=1):
        if score < best:
            best = score
            steps.append((index, seconds, score))
    return steps


def best_at(steps: Sequence[Sequence[float]], budget: float, axis: int = 0) -> float:
    """The anytime curve's value once ``budget`` is consumed (``axis=1``: at that second).

    NaN before the first report.
    """
    value = math.nan
    for step in steps:
        if step[axis] > budget:
            break
        value = step[2]
    return value


def budget_to_reach(steps: Sequence[Sequence[float]], target: float) -> int | None:
    """The budget at which the anytime curve first reaches ``target`` (score <= target)."""
    for step in steps:
        if step[2] <= target:
            return int(step[0])
    return None


def fraction_to_reach(
    steps: Sequence[Sequence[float]], target: float, full_budget: int
) -> float | None:
    """``budget_to_reach / full_budget``; None when the curve never reaches ``target``."""
    reached = budget_to_reach(steps, target)
    return None if reached is None or reached > full_budget else reached / full_budget


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-quantile (0..1, linear interpolation) of ``values``, where inf may occur."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    position = q * (len(ordered) - 1)
    low, high = math.floor(position), math.ceil(position)
    if low == high or ordered[low] == ordered[high]:
        return ordered[low]
    if math.isinf(ordered[high]):
        return math.inf
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summarize(fractions: Sequence[float | None]) -> dict[str, Any]:
    """Median, quartiles and range over seeds; a seed that never reached counts as infinite.

    A median of ``inf`` means most seeds never reached the target within the budget.
    """
    values = [math.inf if f is None else f for f in fractions]
    return {
        "median": percentile(values, 0.5),
        "q1": percentile(values, 0.25),
        "q3": percentile(values, 0.75),
        "min": min(values) if values else math.nan,
        "max": max(values) if values else math.nan,
        "reached": sum(1 for f in fractions if f is not None),
        "seeds": len(values),
    }
