"""Asynchronous successive halving on several objectives (imported with Ray).

The rung bookkeeping (`ParetoRung`) is plain arithmetic; `MultiObjectiveASHA` is the Tune
scheduler around it.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from ray.tune.schedulers import FIFOScheduler, TrialScheduler

from sweeplab._numbers import is_finite_number, is_number
from sweeplab.errors import SpecError
from sweeplab.pareto import Objective, crowding_distances
from sweeplab.strategies._pickled_state import PickledState
from sweeplab.strategies._traits import SchedulerTraits

__all__ = ["MultiObjectiveASHA", "ParetoRung", "ScalarRung", "position_cutoff"]

CONTINUE, STOP = TrialScheduler.CONTINUE, TrialScheduler.STOP
# Fronts smaller than this get their crowding distances in Python, larger ones with numpy.
_SMALL_FRONT = 24


class MultiObjectiveASHA(PickledState, FIFOScheduler):
    """Asynchronous successive halving that promotes trials by Pareto rank (one bracket).

    The rungs are Tune's ASHA's: milestones ``grace_period * reduction_factor ** k`` of
    `time_attr`, up to `max_t`, where every trial stops. A trial is judged once at each rung,
    when it first reports at or past the rung's milestone (the highest such rung it has not
    been judged at), and its values are then recorded there; so is a completed trial's last
    result, as Tune's ASHA records it. Being asynchronous, a trial is compared only with the
    trials recorded at that rung before it. With ``q = 100 * (1 - 1 / reduction_factor)``:

    - **One objective** (Tune's ASHA exactly): the trial's score is its value, negated for
      ``"min"``; it stops iff its score is below ``np.nanpercentile(scores recorded at the
      rung so far, q)``. A result without the objective is not judged (it continues); a NaN
      continues, is recorded, and ``nanpercentile`` ignores it.
    - **Several objectives**: the points recorded at the rung and the new one are put in one
      order: by non-dominated sorting (front 1 first, all objectives signed to minimise; equal
      points share a front), within a front by NSGA-II crowding distance computed within that
      front (`sweeplab.pareto.crowding_distances`, larger first: the front's boundary points
      in each objective have an infinite distance; ties in an objective are sorted by arrival,
      so of equal points the first and the last to arrive are the boundaries), then by earlier
      arrival at the rung (the new point arrives last). Each point's score is minus its
      1-based position in that order. The trial stops iff its score is below
      ``np.nanpercentile(scores of the points recorded before it, q)``, those scores being
      their positions in the same order (the new point included): it continues iff it is in
      about the top ``1 / reduction_factor`` of the rung. A result that reports none of the
      objectives is not judged (as with one objective); one that misses some objective, or
      has a value that is not a finite number, is the worst: it ranks after every recorded
      point (so it stops unless it is the rung's first), and is recorded as judged without a
      point, so it changes no later trial's score.

    With one objective, the rule of positions would differ from Tune's (it ignores how far
    apart the values are), so the value itself is the score.

    Args:
        objectives: The objectives, in the sweep's order; the first is the scheduler's
            ``metric`` as Tune reads it.
        time_attr: The result's attribute that measures progress; it must increase.
        max_t: The progress at which every trial stops.
        grace_period: The first rung's milestone (no trial stops before it).
        reduction_factor: The rungs' spacing, and the inverse of the share that continues.

    Raises:
        SpecError: If an argument breaks its rule.
    """

    sweeplab_traits = SchedulerTraits(pauses=False, exploits=False)

    def __init__(
        self,
        *,
        objectives: Sequence[Objective],
        time_attr: str = "training_iteration",
        max_t: int = 100,
        grace_period: int = 1,
        reduction_factor: float = 4,
    ) -> None:
        objectives = tuple(objectives)
        if not objectives or not all(isinstance(o, Objective) for o in objectives):
            raise SpecError(
                "`objectives` must be one or more sweeplab.pareto.Objective, but got "
                f"{objectives!r}."
            )
        if len({o.name for o in objectives}) != len(objectives):
            raise SpecError(f"`objectives` must have distinct names, but got {objectives!r}.")
        if not 0 < grace_period <= max_t:
            raise SpecError(
                f"`0 < grace_period <= max_t` must hold, but got ({grace_period=}, {max_t=})."
            )
        if not reduction_factor > 1:
            raise SpecError(f"`reduction_factor > 1` must hold, but got {reduction_factor=}.")
        super().__init__()
        self.objectives = objectives
        self._metric = objectives[0].name
        self._time_attr = time_attr
        self._max_t = max_t
        self._quantile = (1 - 1 / reduction_factor) * 100
        # Tune's _Bracket(min_t=grace_period, s=0): its rungs, highest first.
        count = int(np.log(max_t / grace_period) / np.log(reduction_factor) - 0 + 1)
        milestones = [grace_period * reduction_factor**k for k in reversed(range(count))]
        self._rungs: list[ScalarRung | ParetoRung] = [
            ScalarRung(m, objectives[0]) if len(objectives) == 1 else ParetoRung(m, objectives)
            for m in milestones
        ]
        self._num_stopped = 0

    def set_search_properties(self, metric: str | None, mode: str | None, **spec: Any) -> bool:
        """Accepts the first objective's metric and mode (or none): they are already set."""
        first = self.objectives[0]
        return metric in (None, first.name) and mode in (None, first.mode)

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> str:
        if not self._judges(result):
            return CONTINUE
        if result[self._time_attr] >= self._max_t:
            action = STOP
        else:
            action = self._on_rung_result(trial.trial_id, result)
        if action == STOP:
            self._num_stopped += 1
        return action

    def on_trial_complete(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> None:
        if self._judges(result):
            self._on_rung_result(trial.trial_id, result)  # recorded; the decision is moot

    def on_trial_remove(self, tune_controller: Any, trial: Any) -> None:
        pass

    def debug_string(self) -> str:
        rungs = " | ".join(f"Iter {r.milestone:.3f}: {len(r.judged)} judged" for r in self._rungs)
        return f"Using MultiObjectiveASHA: num_stopped={self._num_stopped}\nBracket: {rungs}"

    def _judges(self, result: Mapping[str, Any]) -> bool:
        """Tune's gate: a result without progress or without any objective is not judged."""
        return self._time_attr in result and any(o.name in result for o in self.objectives)

    def _on_rung_result(self, trial_id: str, result: Mapping[str, Any]) -> str:
        progress = result[self._time_attr]
        for rung in self._rungs:
            if progress < rung.milestone or trial_id in rung.judged:
                continue
            return STOP if rung.judge(trial_id, result, self._quantile) else CONTINUE
        return CONTINUE


class ScalarRung:
    """A rung of one objective: Tune's ASHA's ``_Bracket`` bookkeeping for one rung."""

    __slots__ = ("judged", "milestone", "objective")

    def __init__(self, milestone: float, objective: Objective) -> None:
        self.milestone = milestone
        self.objective = objective
        self.judged: dict[str, float] = {}  # trial id -> score (NaN kept, as Tune keeps it)

    def judge(self, trial_id: str, result: Mapping[str, Any], quantile: float) -> bool:
        """Whether the trial stops here; its score is recorded either way."""
        value: Any = result.get(self.objective.name)
        if not is_number(value):
            return False  # Tune cannot score it (it warns), and records nothing
        score = -self.objective.signed(float(value))
        stop = bool(self.judged and score < np.nanpercentile(list(self.judged.values()), quantile))
        self.judged[trial_id] = score
        return stop


class ParetoRung:
    """A rung of several objectives: its recorded points, each with its front, kept as they come.

    A point's front is one more than the largest front among the points that dominate it. A
    new point can only push back points it dominates, each by one front at most (a chain of
    dominance holds the new point once), so an arrival updates the fronts below it level by
    level instead of sorting the rung again. The crowding distances of the new point's front
    are computed only when they decide whether it continues.
    """

    __slots__ = ("_count", "_fronts", "_points", "judged", "milestone", "objectives")

    def __init__(self, milestone: float, objectives: Sequence[Objective]) -> None:
        self.milestone = milestone
        self.objectives = tuple(objectives)
        self.judged: set[str] = set()
        self._points = np.empty((len(self.objectives), 16))  # one column per point, to minimise
        self._fronts = np.empty(16, dtype=np.int64)
        self._count = 0

    def point(self, result: Mapping[str, Any]) -> tuple[float, ...] | None:
        """The signed point of a result, or None when it lacks a finite value of an objective."""
        values = []
        for objective in self.objectives:
            value: Any = result.get(objective.name)
            if not is_finite_number(value):
                return None
            values.append(objective.signed(float(value)))
        return tuple(values)

    def judge(self, trial_id: str, result: Mapping[str, Any], quantile: float) -> bool:
        """Whether the trial stops here; it is recorded either way."""
        self.judged.add(trial_id)
        count = self._count
        point = self.point(result)
        if point is None:
            return count > 0  # last of count + 1: below the cutoff of any recorded point
        front, ahead, peers, dominated = self._place(point)
        stop = False
        if count:
            # Stopping is monotone in the position (a later one has a lower score and, among
            # the others, a higher cutoff), so the crowding distances matter only when the
            # first and the last place in the front disagree.
            first, last = ahead + 1, ahead + peers.size + 1
            stop = -first < position_cutoff(count, first, quantile)
            if stop != (-last < position_cutoff(count, last, quantile)):
                position = ahead + self._crowded_ahead(point, peers) + 1
                stop = -position < position_cutoff(count, position, quantile)
        self._record(point, front, dominated)
        return stop

    def insert(self, point: Sequence[float]) -> int:
        """Records a point; returns its 1-based position in the rung's order (see the class)."""
        front, ahead, peers, dominated = self._place(point)
        position = ahead + self._crowded_ahead(point, peers) + 1
        self._record(point, front, dominated)
        return position

    def fronts(self) -> list[int]:
        """The front of each recorded point, in arrival order."""
        return self._fronts[: self._count].tolist()

    def _place(self, point: Sequence[float]) -> tuple[int, int, np.ndarray, np.ndarray]:
        """A new point's front, the count of recorded points in better fronts, the recorded
        points left in its front (indices) and the ones it dominates (a mask)."""
        count = self._count
        fronts = self._fronts[:count]
        any_less = any_greater = np.zeros(count, dtype=bool)
        for axis, value in enumerate(point):
            column = self._points[axis, :count]
            any_less = any_less | (column < value)
            any_greater = any_greater | (column > value)
        dominated = any_greater & ~any_less
        front = int(fronts[any_less & ~any_greater].max(initial=0)) + 1
        ahead = int(np.count_nonzero(fronts < front))
        peers = np.flatnonzero((fronts == front) & ~dominated)
        return front, ahead, peers, dominated

    def _crowded_ahead(self, point: Sequence[float], peers: np.ndarray) -> int:
        """How many of the new point's peers in its front come before it: those at least as
        far from their neighbours (they arrived earlier)."""
        if peers.size < 2:
            return int(peers.size)  # a front of two or fewer: every distance is infinite
        if peers.size < _SMALL_FRONT:
            members = self._points[:, peers].T.tolist()
            members.append(list(point))
            distances = crowding_distances(members)
            mine = distances[-1]
            return sum(d >= mine for d in distances[:-1])
        new = np.asarray(point, dtype=np.float64)[:, None]
        vector = crowding(np.concatenate([self._points[:, peers], new], axis=1))
        return int(np.count_nonzero(vector[:-1] >= vector[-1]))

    def _record(self, point: Sequence[float], front: int, dominated: np.ndarray) -> None:
        if dominated.any():
            self._push_back(np.flatnonzero(dominated), front)
        if self._count == self._fronts.size:
            self._points = np.concatenate([self._points, np.empty_like(self._points)], axis=1)
            self._fronts = np.concatenate([self._fronts, np.empty_like(self._fronts)])
        self._points[:, self._count] = point
        self._fronts[self._count] = front
        self._count += 1

    def _push_back(self, dominated: np.ndarray, front: int) -> None:
        """Moves back one front each point that the new point (at `front`) now outranks.

        Only the dominated points of the new point's own front move back because of it; on
        each following front, a point moves back iff a point that moved from the front above
        dominates it.
        """
        old = self._fronts[dominated]
        if not (old == front).any():
            return
        order = np.argsort(old, kind="stable")
        dominated, old = dominated[order], old[order]
        # Front `front + k` of the dominated points: positions bounds[k]:bounds[k + 1].
        bounds = np.searchsorted(old, np.arange(front, int(old[-1]) + 2)).tolist()
        points = self._points[:, dominated].T.tolist()
        moved = list(range(bounds[0], bounds[1]))
        pushed: list[int] = []
        level = 0
        while moved:
            pushed.extend(moved)
            level += 1
            if level + 1 >= len(bounds):
                break
            following = []
            for candidate in range(bounds[level], bounds[level + 1]):
                below = points[candidate]
                for mover in moved:
                    above = points[mover]
                    if above != below and all(map(operator.le, above, below)):
                        following.append(candidate)
                        break
            moved = following
        self._fronts[dominated[pushed]] += 1


def crowding(columns: np.ndarray) -> np.ndarray:
    """NSGA-II's crowding distance of each point (a column) of one front, vectorised.

    The same numbers as `sweeplab.pareto.crowding_distances` (ties sorted stably), which
    is faster for a small front.
    """
    count = columns.shape[1]
    distances = np.zeros(count)
    if count <= 2:
        distances[:] = math.inf
        return distances
    for values in columns:
        order = np.argsort(values, kind="stable")
        ordered = values[order]
        low, high = ordered[0], ordered[-1]
        distances[order[0]] = distances[order[-1]] = math.inf
        if high == low:
            continue
        distances[order[1:-1]] += (ordered[2:] - ordered[:-2]) / (high - low)
    return distances


def position_cutoff(count: int, position: int, quantile: float) -> float:
    """``np.nanpercentile`` (linear) of the scores of `count` points recorded before a new one
    at `position`: minus their positions ``1..count + 1`` without `position`.

    Computed in closed form with numpy's own arithmetic, so it is the very number.
    """

    def score(index: int) -> int:  # the index-th score, ascending
        rank = count + 1 - index
        return -(rank if rank > position else rank - 1)

    virtual = (count - 1) * (quantile / 100)
    if virtual >= count - 1:
        return float(score(count - 1))
    below = math.floor(virtual)
    gamma = virtual - below
    low, high = score(below), score(below + 1)
    if gamma >= 0.5:
        return high - (high - low) * (1 - gamma)
    return low + (high - low) * gamma
