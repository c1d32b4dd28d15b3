"""Fronts, ranking order, hypervolume and constraints of `sweeplab.pareto`, against hand-built
cases and brute force."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from sweeplab.pareto import (
    Constraint,
    Objective,
    crowding_distances,
    dominates,
    front_numbers,
    hypervolume,
    pareto_order,
    parse_constraint,
    point_of,
)


def brute_fronts(points: list[tuple[float, ...]]) -> list[int]:
    """Peel non-dominated sets one after another, straight from the definition."""
    left = set(range(len(points)))
    fronts = [0] * len(points)
    number = 1
    while left:
        front = {i for i in left if not any(dominates(points[j], points[i]) for j in left)}
        for i in front:
            fronts[i] = number
        left -= front
        number += 1
    return fronts


def test_hand_built_fronts_with_ties_and_duplicates() -> None:
    points = [(1, 5), (2, 2), (5, 1), (2, 2), (3, 3), (1, 6), (5, 5), (3, 2)]
    # (2, 2) twice: neither dominates the other, both in front 1. (1, 6) is dominated by
    # (1, 5) alone (equal first objective); (3, 2) by (2, 2) (equal second objective); (3, 3)
    # by (3, 2), so one front further; (5, 5) by (3, 3).
    assert front_numbers(points) == [1, 1, 1, 1, 3, 2, 4, 2]


@pytest.mark.parametrize("dimensions", [2, 3])
def test_fronts_match_the_definition_on_random_points(dimensions: int) -> None:
    rng = random.Random(dimensions)
    for _ in range(200):
        count = rng.randint(1, 25)
        # Few distinct values, so ties and duplicates are common.
        points = [tuple(float(rng.randint(0, 4)) for _ in range(dimensions)) for _ in range(count)]
        assert front_numbers(points) == brute_fronts(points), points


def test_one_objective_fronts_are_the_distinct_values_in_order() -> None:
    points = [(3.0,), (1.0,), (3.0,), (2.0,)]
    assert front_numbers(points) == [3, 1, 3, 2]


def test_ranking_order_feasible_by_front_then_first_objective_then_ties() -> None:
    points = [(2.0, 1.0), (1.0, 2.0), (0.0, 0.0), (3.0, 3.0), (1.0, 2.0)]
    violations = [0.0, 0.0, 2.5, 0.0, 0.0]
    order, fronts = pareto_order(points, violations=violations, ties=["a", "d", "e", "b", "c"])
    # (0, 0) breaks a constraint: it ranks after every feasible point, with no front.
    assert fronts == [1, 1, None, 2, 1]
    # Front 1 by the first objective: (1, 2) twice (ties broken by trial id c < d), then (2, 1).
    assert order == [4, 1, 0, 3, 2]


def test_infeasible_points_rank_by_how_far_they_break() -> None:
    order, fronts = pareto_order([(0.0, 0.0), (5.0, 5.0)], violations=[3.0, 1.0])
    assert order == [1, 0] and fronts == [None, None]


def brute_hypervolume(points: list[tuple[float, ...]], reference: tuple[float, ...]) -> float:
    """Inclusion-exclusion over the boxes the points dominate (small sets only)."""
    boxes = [p for p in points if all(x < r for x, r in zip(p, reference, strict=True))]
    total = 0.0
    for size in range(1, len(boxes) + 1):
        for subset in itertools.combinations(boxes, size):
            corner = [max(c) for c in zip(*subset, strict=True)]
            volume = math.prod(r - c for r, c in zip(reference, corner, strict=True))
            total += (-1) ** (size + 1) * volume
    return total


@pytest.mark.parametrize("dimensions", [1, 2, 3])
def test_hypervolume_matches_inclusion_exclusion(dimensions: int) -> None:
    rng = random.Random(10 + dimensions)
    reference = tuple([10.0] * dimensions)
    for _ in range(50):
        points = [
            tuple(rng.uniform(0, 12) for _ in range(dimensions)) for _ in range(rng.randint(1, 7))
        ]
        assert hypervolume(points, reference) == pytest.approx(brute_hypervolume(points, reference))


def test_hypervolume_of_a_hand_built_front() -> None:
    # Two boxes, 3x1 and 1x3, overlapping in a 1x1 square: 3 + 3 - 1.
    assert hypervolume([(1, 3), (3, 1)], (4, 4)) == 5.0
    assert hypervolume([(5, 5)], (4, 4)) == 0.0
    assert hypervolume([], (4, 4)) == 0.0


def test_crowding_distance_favours_the_ends_and_sparse_points() -> None:
    front = [(0.0, 4.0), (1.0, 3.0), (1.5, 2.5), (4.0, 0.0)]
    distances = crowding_distances(front)
    assert distances[0] == distances[3] == math.inf
    assert distances[1] < distances[2]


@pytest.mark.parametrize(
    ("text", "value", "holds"),
    [
        ("latency_ms <= 10", 10.0, True),
        ("latency_ms < 10", 10.0, False),
        ("acc >= 0.9", 0.95, True),
        ("acc > 0.9", 0.9, False),
        ("a/b <= -1e-3", -0.5, True),
    ],
)
def test_constraints(text: str, value: float, holds: bool) -> None:
    constraint = parse_constraint(text)
    assert constraint.holds(value) is holds
    assert (constraint.violation(value) == 0.0) is holds
    assert constraint.violation(math.nan) == math.inf
    assert not constraint.holds(None)


def test_violation_is_the_distance_past_the_bound() -> None:
    assert Constraint("x", "<=", 10.0).violation(12.5) == 2.5
    assert Constraint("x", ">=", 1.0).violation(0.25) == 0.75


@pytest.mark.parametrize("text", ["x =< 1", "x <= ", "<= 1", "x <= inf", "x <= 1 2", ""])
def test_bad_constraints_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="must be"):
        parse_constraint(text)


def test_point_of_signs_each_objective_to_minimise() -> None:
    objectives = (Objective("acc", "max"), Objective("ms", "min"))
    assert point_of({"acc": 0.9, "ms": 3.0, "other": 1.0}, objectives) == (-0.9, 3.0)
