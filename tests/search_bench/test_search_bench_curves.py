"""Anytime curves and the fraction of the baseline's budget, on hand-built reports."""

from __future__ import annotations

import math

import pytest

from benchmarks.search._curves import (
    anytime,
    best_at,
    budget_to_reach,
    fraction_to_reach,
    percentile,
    summarize,
)

# (seconds, score): one report per iteration, in time order.
REPORTS = [(0.5, 3.0), (0.6, 5.0), (1.0, 2.0), (1.5, 2.5), (2.0, 1.0), (3.0, 0.5)]


def test_anytime_keeps_the_improvements_within_the_budget() -> None:
    assert anytime(REPORTS, 10) == [(1, 0.5, 3.0), (3, 1.0, 2.0), (5, 2.0, 1.0), (6, 3.0, 0.5)]
    assert anytime(REPORTS, 4) == [(1, 0.5, 3.0), (3, 1.0, 2.0)]
    assert anytime([], 4) == []


def test_best_at_by_budget_and_by_time() -> None:
    steps = anytime(REPORTS, 10)
    assert math.isnan(best_at(steps, 0))
    assert [best_at(steps, b) for b in (1, 2, 3, 4, 5, 6, 100)] == [3, 3, 2, 2, 1, 0.5, 0.5]
    assert best_at(steps, 1.9, axis=1) == 2.0
    assert best_at(steps, 2.0, axis=1) == 1.0


@pytest.mark.parametrize(
    ("target", "budget", "reached", "fraction"),
    [
        (3.0, 10, 1, 0.1),
        (2.0, 10, 3, 0.3),
        (1.5, 10, 5, 0.5),  # first at or below the target
        (0.5, 6, 6, 1.0),  # exactly at the end of the budget counts
        (0.5, 5, 6, None),  # one iteration past the budget does not
        (0.1, 10, None, None),  # never reached
    ],
)
def test_fraction_to_reach(
    target: float, budget: int, reached: int | None, fraction: float | None
) -> None:
    steps = anytime(REPORTS, 100)
    assert budget_to_reach(steps, target) == reached
    assert fraction_to_reach(steps, target, budget) == fraction


def test_percentile_with_never_reached() -> None:
    assert percentile([0.1, 0.2, 0.3, 0.4], 0.5) == pytest.approx(0.25)
    assert percentile([0.1, math.inf, 0.3], 0.5) == 0.3
    assert percentile([0.1, math.inf, math.inf], 0.5) == math.inf
    assert percentile([0.1, 0.2, math.inf, math.inf], 0.5) == math.inf
    assert math.isnan(percentile([], 0.5))


def test_summarize_counts_never_reached_as_infinite() -> None:
    summary = summarize([0.2, None, 0.1, 0.4, None])
    assert summary["median"] == 0.4
    assert summary["q1"] == 0.2
    assert summary["q3"] == math.inf
    assert (summary["min"], summary["max"]) == (0.1, math.inf)
    assert (summary["reached"], summary["seeds"]) == (3, 5)
    assert summarize([None, None, 0.3])["median"] == math.inf
