"""Several objectives at once: constraints, Pareto fronts, the order of a ranking, hypervolume.

Everything here is plain arithmetic on points, with no Ray, Optuna or MLflow, so the engine,
the schedulers, the tracking and the simulator all rank by the same rules:

- A point holds one value per objective. `Objective.signed` turns a value into one to
  minimise, so the rules below only ever minimise.
- ``a`` dominates ``b`` when ``a`` is no worse in every objective and better in at least one.
  Equal points dominate neither each other, so duplicates share a front.
- Front 1 is the set of points that no point dominates; front ``k + 1`` is front 1 of what is
  left after fronts ``1..k``. Equivalently, a point's front is one more than the longest chain
  of points that dominate it one after another.
- **Ranking order** (`pareto_order`): feasible points before infeasible ones; then by front;
  within a front by the first objective, then the next, and so on; then by the caller's tie
  key (the trial id). Infeasible points come after every feasible one, by how far they break
  their constraints (the sum of the amounts), then by the same order.
- **Hypervolume** (`hypervolume`): the volume that the points dominate, bounded by a reference
  point that every counted point must be strictly better than.
"""

from __future__ import annotations

import dataclasses
import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence

__all__ = [
    "Constraint",
    "Objective",
    "crowding_distances",
    "dominates",
    "front_numbers",
    "hypervolume",
    "pareto_order",
    "parse_constraint",
    "parse_pick",
]

Point = Sequence[float]

_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    "<": operator.lt,
    ">=": operator.ge,
    ">": operator.gt,
}
_CONSTRAINT_RE = re.compile(
    r"^\s*(?P<metric>[A-Za-z_][\w./-]*)\s*(?P<op><=|>=|<|>)\s*(?P<bound>[-+]?"
    r"(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$"
)


@dataclasses.dataclass(frozen=True)
class Objective:
    """One reported metric to optimise: its name and ``"min"`` or ``"max"``."""

    name: str
    mode: str

    def signed(self, value: float) -> float:
        """``value`` as a quantity to minimise."""
        return value if self.mode == "min" else -value


@dataclasses.dataclass(frozen=True)
class Constraint:
    """A bound on a reported metric, such as ``latency_ms <= 10``.

    A trial whose value breaks it (or that reported no finite value) is infeasible.
    """

    metric: str
    op: str
    bound: float

    def __str__(self) -> str:
        return f"{self.metric} {self.op} {self.bound:g}"

    def holds(self, value: float | None) -> bool:
        """Whether ``value`` keeps the constraint (a missing or NaN value never does)."""
        if value is None or not math.isfinite(value):
            return False
        return _OPERATORS[self.op](value, self.bound)

    def violation(self, value: float | None) -> float:
        """How far ``value`` breaks the constraint: 0 when it holds, else a positive amount.

        A strict bound that is met exactly breaks by a tiny amount; a missing or non-finite
        value breaks by infinity. This is Optuna's convention (``<= 0`` is feasible).
        """
        if value is None or not math.isfinite(value):
            return math.inf
        if self.holds(value):
            return 0.0
        gap = value - self.bound if self.op in ("<=", "<") else self.bound - value
        return max(gap, 1e-12)


def parse_constraint(text: str) -> Constraint:
    """``"latency_ms <= 10"`` as a `Constraint`.

    Raises:
        ValueError: The text is not ``<metric> <op> <number>`` with ``op`` one of ``<=``,
            ``<``, ``>=``, ``>`` and a finite number.
    """
    match = _CONSTRAINT_RE.match(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(
            "must be '<metric> <op> <number>' with <op> one of <=, <, >=, >, "
            "such as 'latency_ms <= 10'"
        )
    bound = float(match["bound"])
    if not math.isfinite(bound):
        raise ValueError("must bound the metric by a finite number")
    return Constraint(match["metric"], match["op"], bound)


def parse_pick(text: str, objectives: Sequence[Objective]) -> tuple[list[Constraint], Objective]:
    """A pick rule, ``"latency_ms <= 10, val_loss"``: filters, then the deciding objective.

    The rule picks one trial of a front: the front's trials whose values keep every filter,
    then the best of them by the last part's objective.

    Raises:
        ValueError: A part is not a constraint, a filter or the last part names no objective.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError("must be constraints then a metric, such as 'latency_ms <= 10, val_loss'")
    parts = [p.strip() for p in text.split(",")]
    names = {o.name: o for o in objectives}
    filters = []
    for part in parts[:-1]:
        constraint = parse_constraint(part)
        if constraint.metric not in names:
            raise ValueError(f"filters on {constraint.metric!r}, not one of {list(names)}")
        filters.append(constraint)
    if parts[-1] not in names:
        raise ValueError(f"must end with the metric that picks, one of {list(names)}")
    return filters, names[parts[-1]]


def dominates(a: Point, b: Point) -> bool:
    """Whether ``a`` dominates ``b`` (both to minimise)."""
    return all(x <= y for x, y in zip(a, b, strict=True)) and any(
        x < y for x, y in zip(a, b, strict=True)
    )


def front_numbers(points: Sequence[Point]) -> list[int]:
    """The front (1 = non-dominated) of each point, all to minimise and finite."""
    count = len(points)
    if count == 0:
        return []
    if len(points[0]) == 2:
        return _fronts_2d(points)
    dominated_by = [0] * count
    dominating: list[list[int]] = [[] for _ in range(count)]
    for i in range(count):
        for j in range(i + 1, count):
            if dominates(points[i], points[j]):
                dominating[i].append(j)
                dominated_by[j] += 1
            elif dominates(points[j], points[i]):
                dominating[j].append(i)
                dominated_by[i] += 1
    fronts = [0] * count
    current = [i for i in range(count) if dominated_by[i] == 0]
    number = 1
    while current:
        following = []
        for i in current:
            fronts[i] = number
            for j in dominating[i]:
                dominated_by[j] -= 1
                if dominated_by[j] == 0:
                    following.append(j)
        current = following
        number += 1
    return fronts


def _fronts_2d(points: Sequence[Point]) -> list[int]:
    """Fronts of 2-D points in O(n log n): sweep by the first objective, keep each front's
    smallest second objective so far (they increase from front to front)."""
    import bisect

    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))
    fronts = [0] * len(points)
    tails: list[float] = []  # tails[k]: smallest second objective seen in front k + 1
    last: tuple[float, float] | None = None
    last_front = 0
    for i in order:
        x, y = points[i][0], points[i][1]
        if last is not None and (x, y) == last:
            fronts[i] = last_front  # a duplicate shares its twin's front
            continue
        # The first front none of whose members dominates (x, y): a member seen earlier has
        # x' <= x, so it dominates unless y' > y (or it is the same point, handled above).
        # With x' == x and y' < y it dominates too; with y' == y and x' < x it dominates.
        k = bisect.bisect_right(tails, y)
        if k == len(tails):
            tails.append(y)
        else:
            tails[k] = y
        fronts[i] = k + 1
        last, last_front = (x, y), k + 1
    return fronts


def crowding_distances(points: Sequence[Point]) -> list[float]:
    """NSGA-II's crowding distance of each point of one front (boundary points: infinity)."""
    count = len(points)
    if count <= 2:
        return [math.inf] * count
    distances = [0.0] * count
    for axis in range(len(points[0])):
        order = sorted(range(count), key=lambda i: points[i][axis])
        low, high = points[order[0]][axis], points[order[-1]][axis]
        distances[order[0]] = distances[order[-1]] = math.inf
        if high == low:
            continue
        for position in range(1, count - 1):
            gap = points[order[position + 1]][axis] - points[order[position - 1]][axis]
            distances[order[position]] += gap / (high - low)
    return distances


def pareto_order(
    points: Sequence[Point],
    *,
    violations: Sequence[float] | None = None,
    ties: Sequence[str] | None = None,
) -> tuple[list[int], list[int | None]]:
    """The ranking order of points (all to minimise and finite) and each point's front.

    Args:
        points: One point per entry.
        violations: How far each point breaks its constraints (0: feasible); infeasible
            points get no front (``None``) and rank after every feasible one.
        ties: A last tie key per point (the trial id), so the order is deterministic.

    Returns:
        The indices of ``points`` best first, and the front of each point (by index).
    """
    count = len(points)
    violations = list(violations) if violations is not None else [0.0] * count
    ties = list(ties) if ties is not None else [""] * count
    feasible = [i for i in range(count) if violations[i] <= 0]
    fronts: list[int | None] = [None] * count
    for i, front in zip(feasible, front_numbers([points[i] for i in feasible]), strict=True):
        fronts[i] = front

    def key(i: int) -> tuple:
        if fronts[i] is not None:
            return (0, fronts[i], 0.0, tuple(points[i]), ties[i])
        return (1, 0, violations[i], tuple(points[i]), ties[i])

    return sorted(range(count), key=key), fronts


def hypervolume(points: Sequence[Point], reference: Point) -> float:
    """The volume dominated by ``points`` (to minimise) and bounded by ``reference``.

    Points not strictly better than the reference in every objective add nothing. Exact: a
    sweep in 2-D, slicing along the first objective above that (fine for the fronts of a
    sweep, not for thousands of points in many dimensions).
    """
    kept = [tuple(p) for p in points if all(x < r for x, r in zip(p, reference, strict=True))]
    if not kept:
        return 0.0
    return _hypervolume(sorted(set(kept)), tuple(reference))


def _hypervolume(points: list[tuple[float, ...]], reference: tuple[float, ...]) -> float:
    if len(reference) == 1:
        return reference[0] - min(p[0] for p in points)
    if len(reference) == 2:
        volume, best_y = 0.0, reference[1]
        for x, y in sorted(points):
            if y < best_y:
                volume += (reference[0] - x) * (best_y - y)
                best_y = y
        return volume
    # Slice along the first objective: between consecutive x values, the points with x no
    # larger than the slice's start dominate a (k-1)-dimensional volume.
    ordered = sorted(points)
    volume = 0.0
    for index, point in enumerate(ordered):
        upper = ordered[index + 1][0] if index + 1 < len(ordered) else reference[0]
        width = upper - point[0]
        if width > 0:
            volume += width * _hypervolume([p[1:] for p in ordered[: index + 1]], reference[1:])
    return volume


def point_of(values: Mapping[str, float], objectives: Sequence[Objective]) -> tuple[float, ...]:
    """The signed point (to minimise) of reported ``values`` for ``objectives``."""
    return tuple(o.signed(float(values[o.name])) for o in objectives)
