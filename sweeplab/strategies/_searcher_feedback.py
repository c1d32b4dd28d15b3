"""What a model-based searcher learns from a trial that ended: finished, stopped, diverged, errored.

Ray's `OptunaSearch` and `HyperOptSearch` tell their model every ended trial's last value as a
final one. Under ASHA most trials end at their first rung, so TPE then models iteration-1 values
as if they were final, and proposes more fast starters. :class:`TrialFeedbackSearcher` sits
between Tune and such a searcher and tells it what each trial really was.

How an ending is told apart (Ray Tune 2.60, ``tune_controller.py``). Tune calls the searcher's
``on_trial_complete(trial_id, result)`` for every trial that ends without an error, with the
trial's last result flattened:

- A scheduler or a stopper that stops a trial decides *at a result*: Tune marks that result
  ``done`` and withholds it from the searcher's ``on_trial_result``; it reaches the searcher
  only in ``on_trial_complete``.
- A training function that returns by itself makes Tune replay its last result, already given
  to ``on_trial_result``, now marked ``done``.
- A trial Tune stops from outside (the sweep's time budget) ends on an already seen result
  that is not marked ``done``; a paused or pending trial that is removed ends with no result.

So ``done`` alone does not say "finished" (Tune sets it on a stopped trial's result too). A
trial is **finished** when its last result reached ``max_iterations``, or was already seen and
is marked ``done``; **diverged** when its last value of the metric is NaN or infinite (sweeplab
stops such a trial at that report, see :mod:`sweeplab.engine._divergence`); **stopped** otherwise;
**errored** when Tune says so.

What each searcher is told:

- **Optuna** (Optuna's own semantics): finished -> COMPLETE with its last value; stopped ->
  PRUNED, with the value of each reported iteration as the trial's intermediate values (the
  stopping one included), so that TPE ranks it below the finished trials, by how far it got and
  then by its value there; diverged and errored -> FAIL, with no value.
- **HyperOpt**: its TPE uses only the order of the trials' losses (``ap_split_trials`` sorts
  them). The loss it gets is a code of Optuna's order: ``tier + 1/2 + atan(loss) / pi``, where
  ``tier`` is 0 for a finished trial and ``max_iterations - iterations`` for a stopped one.
  The second term maps every finite loss into (0, 1) in order, so every finished trial comes
  before every stopped one, and a stopped trial that got further before one that got less far.
  A diverged or errored trial, and a stopped one that reported no value, is an errored
  HyperOpt job: left out of the model, as Optuna's TPE leaves out FAIL.
  Dropping stopped trials instead would leave TPE mostly random under ASHA (most trials stop),
  and a fixed penalty would lose how far each got.

With several metrics (Ray's `OptunaSearch` with lists of metrics and modes), a trial's point is
the values of its last report that holds every objective (finite), as the sweep ranks it
(`sweeplab.pareto`); it is **diverged** when its last result has a NaN or infinite value of any
objective. Optuna is told:

- finished or stopped -> COMPLETE with its point; a trial with no point -> PRUNED, with no
  values (and, under constraints, infinitely infeasible). A stopped trial is told as complete,
  not PRUNED, on purpose: Optuna's multi-objective TPE ranks PRUNED trials without values all
  alike, below every complete one, and NSGA-II and the GP sampler leave them out, so under ASHA,
  where most trials stop, the model would learn from the few that finished. Its last point is
  also the one the sweep ranks it by, so the searcher and the ranking judge a trial alike; that
  point is usually dominated by longer-trained ones, which is how ASHA judged it too.
- diverged and errored -> FAIL, as with one metric.

Other searchers are told what Tune tells them.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ray.tune.search import Searcher

from sweeplab._numbers import diverged, is_finite_number
from sweeplab.strategies._pickled_state import PickledState

if TYPE_CHECKING:
    from sweeplab.pareto import Objective

__all__ = [
    "OUTCOMES",
    "OutcomeLog",
    "TrialFeedbackSearcher",
    "TrialOutcome",
    "hyperopt_loss",
    "with_trial_feedback",
]

logger = logging.getLogger(__name__)

OUTCOMES = ("finished", "stopped", "diverged", "errored")
_ITERATION = "training_iteration"


@dataclasses.dataclass(frozen=True)
class TrialOutcome:
    """How one trial ended, as its searcher learns it.

    Attributes:
        kind: One of :data:`OUTCOMES`.
        values: The finite values of the metric by ``training_iteration``, the last result's
            included.
        withheld: Whether the last result never reached ``on_trial_result`` (Tune withholds
            the result at which a scheduler or stopper stops a trial).
        point: With several objectives, the values of the last result that holds every one of
            them finite, by name; None when no result does, and with one objective.
    """

    kind: str
    values: dict[int, float]
    withheld: bool = False
    point: dict[str, float] | None = None

    @property
    def last_iteration(self) -> int | None:
        """The last iteration with a finite value, or None."""
        return max(self.values) if self.values else None

    @property
    def last_value(self) -> float | None:
        """The value at :attr:`last_iteration`, or None."""
        last = self.last_iteration
        return None if last is None else self.values[last]


class OutcomeLog:
    """The values each live trial reported, and the outcome of each trial that ends.

    Args:
        metric: The metric the searcher optimises (with several, the first).
        max_iterations: A trial's budget in reports; None when the sweep sets none.
        objectives: With several metrics, all their names: each trial's last point is kept
            (`TrialOutcome.point`), and a NaN or infinite value of any of them is a divergence.
    """

    def __init__(
        self, metric: str, max_iterations: int | None, *, objectives: Sequence[str] = ()
    ) -> None:
        self.metric = metric
        self.max_iterations = max_iterations
        self.objectives = tuple(objectives) or (metric,)
        self.values: dict[str, dict[int, float]] = {}
        self.seen: dict[str, set[int]] = {}
        self.points: dict[str, dict[str, float]] = {}

    def record(self, trial_id: str, result: Mapping[str, Any]) -> bool:
        """Notes a result given to the searcher; returns whether its metric is finite."""
        iteration = result.get(_ITERATION)
        value: Any = result.get(self.metric)
        if isinstance(iteration, int):
            self.seen.setdefault(trial_id, set()).add(iteration)
            if is_finite_number(value):
                self.values.setdefault(trial_id, {})[iteration] = float(value)
        point = self._point(result)
        if point is not None:
            self.points[trial_id] = point
        return is_finite_number(value)

    def _point(self, result: Mapping[str, Any]) -> dict[str, float] | None:
        """The objectives' values in `result` if it holds every one finite (several only)."""
        if len(self.objectives) < 2:
            return None
        if not all(is_finite_number(result.get(name)) for name in self.objectives):
            return None
        return {name: float(result[name]) for name in self.objectives}

    def outcome(
        self, trial_id: str, result: Mapping[str, Any] | None, error: bool = False
    ) -> TrialOutcome:
        """The outcome of `trial_id`, which ended with `result`; forgets the trial."""
        values = self.values.pop(trial_id, {})
        seen = self.seen.pop(trial_id, set())
        kept = self.points.pop(trial_id, None)
        point = (self._point(result) if result else None) or kept
        if error:
            return TrialOutcome("errored", values, point=point)
        if not result:
            return TrialOutcome("stopped", values, point=point)
        value: Any = result.get(self.metric)
        iteration = result.get(_ITERATION)
        if any(diverged(result, name) for name in self.objectives):
            return TrialOutcome("diverged", values, point=point)
        step = iteration if isinstance(iteration, int) else max(values, default=0) + 1
        if is_finite_number(value):
            values = {**values, step: float(value)}
        if not isinstance(iteration, int):
            # No iteration: nothing says it was cut.
            return TrialOutcome("finished", values, point=point)
        reached = self.max_iterations is not None and iteration >= self.max_iterations
        returned = iteration in seen and bool(result.get("done"))
        kind = "finished" if reached or returned else "stopped"
        return TrialOutcome(kind, values, withheld=iteration not in seen, point=point)


def hyperopt_loss(outcome: TrialOutcome, *, mode: str, max_iterations: int | None) -> float | None:
    """The loss HyperOpt gets for a finished or stopped trial (see the module's docstring).

    None when HyperOpt should get no loss: a diverged or errored trial, or one with no value.
    """
    value = outcome.last_value
    if outcome.kind not in ("finished", "stopped") or value is None:
        return None
    loss = value if mode == "min" else -value
    tier = 0
    if outcome.kind == "stopped":
        reached = outcome.last_iteration or 0
        tier = max(1, max_iterations - reached) if max_iterations is not None else 1
    return tier + 0.5 + math.atan(loss) / math.pi


class TrialFeedbackSearcher(PickledState, Searcher):
    """Wraps an `OptunaSearch` or `HyperOptSearch` so that it learns each trial's outcome.

    See the module's docstring for what each searcher is told. Results whose metric is NaN or
    infinite are not passed on (Optuna would store them as intermediate values).

    Args:
        inner: The searcher.
        metric: The metric it optimises, or the list of its metrics (an `OptunaSearch` only).
        mode: ``"min"`` or ``"max"``, or the list of each metric's.
        max_iterations: A trial's budget in reports.
    """

    def __init__(
        self,
        inner: Searcher,
        *,
        metric: str | list[str],
        mode: str | list[str],
        max_iterations: int | None,
    ) -> None:
        super().__init__(metric=metric, mode=mode)
        self.inner = inner
        self.max_iterations = max_iterations
        names = [metric] if isinstance(metric, str) else list(metric)
        self.log = OutcomeLog(names[0], max_iterations, objectives=names)

    def set_search_properties(
        self, metric: str | None, mode: str | None, config: dict, **spec: Any
    ) -> bool:
        return bool(self.inner.set_search_properties(metric, mode, config, **spec))

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        return self.inner.suggest(trial_id)

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        if self.log.record(trial_id, result):
            self.inner.on_trial_result(trial_id, result)

    def on_trial_complete(
        self, trial_id: str, result: dict | None = None, error: bool = False
    ) -> None:
        outcome = self.log.outcome(trial_id, result, error)
        if isinstance(self.inner, _loaded_class(_OPTUNA_MODULE, "OptunaSearch")):
            self._tell_optuna(trial_id, outcome, result)
        elif isinstance(self.inner, _loaded_class(_HYPEROPT_MODULE, "HyperOptSearch")):
            self._tell_hyperopt(trial_id, outcome)
        else:
            self.inner.on_trial_complete(trial_id, result=result, error=error)

    def _tell_optuna(self, trial_id: str, outcome: TrialOutcome, result: dict | None) -> None:
        if len(self.log.objectives) > 1:
            # Several metrics: a stopped trial is complete with its last point (see the
            # module's docstring); `OptunaSearch` tells PRUNED for no result, FAIL for an error.
            if outcome.kind in ("finished", "stopped"):
                self.inner.on_trial_complete(trial_id, result=outcome.point)
            else:
                self.inner.on_trial_complete(trial_id, result=None, error=True)
            return
        if outcome.kind == "finished":
            self.inner.on_trial_complete(trial_id, result=result)
        elif outcome.kind == "stopped":
            # The stopping result never reached `on_trial_result`: report it as the last step.
            if result and outcome.withheld and result.get(_ITERATION) == outcome.last_iteration:
                self.inner.on_trial_result(trial_id, result)
            # No value makes `OptunaSearch` tell PRUNED; Optuna takes the last intermediate one.
            self.inner.on_trial_complete(trial_id, result=None)
        else:
            self.inner.on_trial_complete(trial_id, result=None, error=True)

    def _tell_hyperopt(self, trial_id: str, outcome: TrialOutcome) -> None:
        loss = hyperopt_loss(outcome, mode=str(self.mode), max_iterations=self.max_iterations)
        if loss is None:
            self.inner.on_trial_complete(trial_id, result=None, error=True)
            return
        # `HyperOptSearch` takes `metric_op * result[metric]` as the loss (metric_op is +-1).
        key = self.inner.metric
        self.inner.on_trial_complete(trial_id, result={key: self.inner.metric_op * loss})


def with_trial_feedback(
    searcher: Any,
    *,
    metric: str,
    mode: str,
    max_iterations: int | None,
    objectives: Sequence[Objective] = (),
) -> Any:
    """`searcher` wrapped in :class:`TrialFeedbackSearcher` if it is Optuna's or HyperOpt's.

    With several ``objectives``, only an `OptunaSearch` of several metrics is wrapped (with its
    own lists of metrics and modes); other searchers are told what Tune tells them.
    """
    optuna_search = _loaded_class(_OPTUNA_MODULE, "OptunaSearch")
    hyperopt_search = _loaded_class(_HYPEROPT_MODULE, "HyperOptSearch")

    if len(objectives) > 1:
        if isinstance(searcher, optuna_search) and isinstance(searcher.metric, list):
            return TrialFeedbackSearcher(
                searcher,
                metric=list(searcher.metric),
                mode=list(searcher.mode),
                max_iterations=max_iterations,
            )
        return searcher
    if isinstance(searcher, (optuna_search, hyperopt_search)):
        return TrialFeedbackSearcher(
            searcher, metric=metric, mode=mode, max_iterations=max_iterations
        )
    return searcher


_OPTUNA_MODULE = "ray.tune.search.optuna.optuna_search"
_HYPEROPT_MODULE = "ray.tune.search.hyperopt.hyperopt_search"


def _loaded_class(module: str, name: str) -> type[Any]:
    """The class `name` of `module` if that module is loaded; else a class nothing is an instance
    of. A searcher of a module nobody imported cannot exist, and importing HyperOpt's wrapper to
    find that out took 1.3 s of every sweep's start (and, in `on_trial_complete`, of an Optuna
    sweep's first ended trial)."""
    loaded = sys.modules.get(module)
    cls = getattr(loaded, name, None) if loaded is not None else None
    return cls if isinstance(cls, type) else _NoSearcher


class _NoSearcher:
    """No searcher is an instance of this class."""
