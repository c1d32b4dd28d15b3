"""The scheduler and the trial source of a sweep in the trial loop: the objects `sweeplab sweep`
builds.

The scheduler and the search algorithm come from the strategy registry
(`sweeplab.strategies.build_scheduler`, `build_search`), as the engine's Tuner gets them, and
are set up the way ``tune.Tuner`` sets them up (Ray Tune 2.60, ``tune.py``):

- the scheduler is told the sweep's metric and mode (``set_search_properties``);
- a ``Searcher`` is wrapped in Tune's own ``ConcurrencyLimiter`` at the trial limit the engine
  passes as ``max_concurrent_trials`` (`tune_trial_limit`), and asked for one config per new
  trial as Tune's ``SearchGenerator`` asks it (`SearcherSource`);
- any other search algorithm (Tune's ``BasicVariantGenerator``, for a grid) makes its own trials
  from an ``Experiment`` over the param space, as under Tune (`AlgorithmSource`).

A sweep that names ``"pbt"`` gets the loop's own synchronous PBT (`LoopPBT`), whose exploit
is a decision of the loop's. Strategies the loop cannot run are refused before anything runs.
"""

from __future__ import annotations

import copy
import tempfile
import uuid
from typing import Any

from sweeplab.errors import SpecError
from sweeplab.loop._backend import TrialBackend
from sweeplab.loop._dicts import merge_suggestion
from sweeplab.loop._loop import TrialLoop
from sweeplab.loop._source import TrialSource
from sweeplab.pareto import Objective
from sweeplab.space import TuneSearch
from sweeplab.strategies import (
    RuleBreak,
    StrategySweep,
    build_scheduler,
    build_search,
    scheduler_traits,
    tune_trial_limit,
)

__all__ = [
    "TUNE_MIN_PENDING_TRIALS",
    "AlgorithmSource",
    "SearcherSource",
    "simulated_max_pending",
    "simulated_scheduler",
    "simulated_source",
    "simulation_rule_break",
    "sweep_loop",
]

# Tune's `_max_pending_trials` for its own variant generator (a grid): at least 200.
TUNE_MIN_PENDING_TRIALS = 200

_WARM_START = (
    "cannot be simulated: a warm start is the engine's to plan from earlier sweeps; "
    "simulate the sweep without it"
)


def simulation_rule_break(sweep: StrategySweep, *, planned: bool = False) -> RuleBreak | None:
    """The rule of the simulator that `sweep` breaks, or None.

    A warm start is refused unless `planned` (the engine plans it from earlier sweeps and
    passes its search). (A configured scheduler object that exploits, Tune's PBT or PB2, is
    refused by the `Sweep` itself; the named ``"pbt"`` runs as `LoopPBT`.) A scheduler that
    pauses trials (HyperBand) runs: a resumed trial goes on from its next iteration.
    """
    if sweep.warm_start is not None and not planned:
        return RuleBreak("warm_start", _WARM_START, sweep.warm_start)
    return None


def simulated_scheduler(sweep: StrategySweep, *, workers: int) -> Any:
    """The sweep's scheduler, told the sweep's metric and mode as ``tune.Tuner`` does.

    Named ``"pbt"``, it is sweeplab's synchronous PBT (`LoopPBT`), seeded by the sweep.

    Raises:
        SpecError: If a configured scheduler object has a metric or mode of its own.
    """
    scheduler = build_scheduler(sweep, max_running=workers)
    if not scheduler.set_search_properties(sweep.metric, sweep.mode):
        raise RuleBreak(
            "scheduler",
            "must not set its own `metric` or `mode`: the sweep's are passed to it, as "
            "Tune's controller passes them",
            scheduler,
        ).error()
    return scheduler


class SearcherSource:
    """A Tune ``Searcher`` behind Tune's ``ConcurrencyLimiter``, asked as ``SearchGenerator`` asks.

    ``SearchGenerator`` itself builds a full Tune ``Trial`` per suggestion (a storage context,
    a placement group factory); the simulator needs only the id and the config, so this class
    keeps its bookkeeping (the count of trials made against ``num_samples``, ``FINISHED``)
    and makes none.

    Args:
        searcher: The search algorithm of the sweep's `TuneSearch`.
        param_space: The `TuneSearch`'s param space (merged under each suggestion).
        num_samples: Trials to make.
        max_concurrent: The trial limit the engine gives Tune (``max_concurrent_trials``).
    """

    def __init__(
        self, searcher: Any, *, param_space: dict[str, Any], num_samples: int, max_concurrent: int
    ) -> None:
        from ray.tune.search import ConcurrencyLimiter

        self.searcher = ConcurrencyLimiter(searcher, max_concurrent=max_concurrent)
        self.param_space = param_space
        self.num_samples = num_samples
        self.made = 0
        self.finished = False
        # Ids as Tune's variant generator makes them: a prefix of the sweep's own, a count
        # (no generator: a resumed sweep's engine pickles the source).
        self._prefix = uuid.uuid4().hex[:5]
        self._next_id = 0
        self._pending_id: str | None = None

    def next_trial(self) -> tuple[str, dict[str, Any]] | None:
        from ray.tune.search import Searcher

        if self.is_finished():
            return None
        # Tune draws a fresh id for each attempt; an id the limiter refused is never seen again.
        trial_id = self._pending_id or self._new_id()
        suggested = self.searcher.suggest(trial_id)
        if suggested == Searcher.FINISHED:
            self.finished = True
            self._pending_id = None
            return None
        if suggested is None:
            self._pending_id = trial_id
            return None
        self._pending_id = None
        self.made += 1
        return trial_id, merge_suggestion(self.param_space, copy.deepcopy(suggested))

    def _new_id(self) -> str:
        trial_id = f"{self._prefix}_{self._next_id:05d}"
        self._next_id += 1
        return trial_id

    def is_finished(self) -> bool:
        return self.finished or self.made >= self.num_samples

    def set_finished(self) -> None:
        self.finished = True

    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
        self.searcher.on_trial_result(trial_id, result)

    def on_trial_complete(
        self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False
    ) -> None:
        self.searcher.on_trial_complete(trial_id, result=result, error=error)


class AlgorithmSource:
    """A Tune ``SearchAlgorithm`` (a grid's ``BasicVariantGenerator``) making its own trials.

    It is given the sweep's param space in an ``Experiment``, as ``tune.Tuner`` gives it; the
    experiment's folder is a temporary one, removed by `close`. Tune runs no concurrency
    limiter over such an algorithm.

    Args:
        algorithm: The search algorithm of the sweep's `TuneSearch`.
        search: The `TuneSearch` (its param space and ``num_samples``).
        metric, mode: The sweep's.
    """

    def __init__(self, algorithm: Any, search: TuneSearch, *, metric: str, mode: str) -> None:
        from ray.tune import Experiment

        self.algorithm = algorithm
        folder = tempfile.TemporaryDirectory(prefix="sweeplab-simulate-")
        self._folder: tempfile.TemporaryDirectory[str] | None = folder
        experiment = Experiment(
            "simulated",
            run=_no_training,
            config=search.param_space,
            num_samples=search.num_samples,
            storage_path=folder.name,
        )
        if search.param_space:
            algorithm.set_search_properties(metric, mode, search.param_space)
        algorithm.add_configurations([experiment])

    def next_trial(self) -> tuple[str, dict[str, Any]] | None:
        trial = self.algorithm.next_trial()
        return None if trial is None else (trial.trial_id, trial.config)

    def is_finished(self) -> bool:
        return bool(self.algorithm.is_finished())

    def set_finished(self) -> None:
        self.algorithm.set_finished()

    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
        self.algorithm.on_trial_result(trial_id, result)

    def on_trial_complete(
        self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False
    ) -> None:
        self.algorithm.on_trial_complete(trial_id, result=result, error=error)

    def close(self) -> None:
        if self._folder is not None:
            self._folder.cleanup()

    def __getstate__(self) -> dict[str, Any]:
        # The experiment's folder is only the storage path of Tune trials that never run.
        return {**self.__dict__, "_folder": None}


def _no_training(config: dict[str, Any]) -> None:
    """The trainable named in a grid's ``Experiment``: the simulator never runs it."""


def simulated_source(
    sweep: StrategySweep, *, workers: int, search: TuneSearch | None = None
) -> SearcherSource | AlgorithmSource:
    """The trial source of `sweep`, run at most `workers` trials at once: over `search`, or
    over the search its strategy builds when None.

    Raises:
        SpecError: If the sweep's searcher is neither a Tune ``Searcher`` nor a
            ``SearchAlgorithm``.
    """
    from ray.tune.search import SearchAlgorithm, Searcher

    search = search or build_search(sweep)
    alg = search.search_alg
    if isinstance(alg, Searcher):
        # A simulated trial that waits holds nothing, as a one-worker trial waits in Tune's
        # queue: a scheduler that pauses trials gets every trial up front, as from the engine.
        limit = tune_trial_limit(
            scheduler_traits(sweep.scheduler, declared=sweep.scheduler_traits),
            concurrency=workers,
            total_trials=search.num_samples,
            waiting_holds_nothing=True,
        )
        return SearcherSource(
            alg,
            param_space=search.param_space,
            num_samples=search.num_samples,
            max_concurrent=limit,
        )
    if isinstance(alg, SearchAlgorithm):
        return AlgorithmSource(alg, search, metric=sweep.metric, mode=sweep.mode)
    raise SpecError(
        "Sweep field `searcher` cannot be simulated: it must build a Ray Tune `Searcher` or "
        f"`SearchAlgorithm`, but got {alg!r}."
    )


def simulated_max_pending(sweep: StrategySweep, source: TrialSource) -> int | None:
    """How many trials the controller makes ahead for `sweep` (Tune's ``_max_pending_trials``:
    the search's trial limit, or 200 for a grid), where its scheduler pauses trials; None
    (trials made as workers free up) for one that only stops them, which is the same there."""
    if not scheduler_traits(sweep.scheduler, declared=sweep.scheduler_traits).pauses:
        return None
    if isinstance(source, SearcherSource):
        return int(source.searcher.max_concurrent)
    return TUNE_MIN_PENDING_TRIALS


def sweep_loop(
    sweep: Any,
    backend: TrialBackend,
    *,
    workers: int,
    budget_iterations: int | None = None,
    search: TuneSearch | None = None,
    keep_reports: bool = True,
) -> TrialLoop:
    """The trial loop of `sweep` on `backend`: its scheduler and search as `sweeplab sweep`
    builds them, `workers` trials at once. Call `TrialLoop.run`, then `TrialLoop.close`.

    `search` replaces the search the strategy builds: the engine passes a warm-started one.
    `keep_reports`: see `TrialLoop` (the engine keeps only each ended trial's last result).

    Raises:
        SpecError: If the sweep's strategy cannot run in the loop (a configured PBT object, a
            warm start), or a configured scheduler has a metric or mode of its own.
    """
    from sweeplab.space import decode_config

    broken = simulation_rule_break(sweep, planned=search is not None)
    if broken is not None:
        raise broken.error()
    space = sweep.space
    scheduler = simulated_scheduler(sweep, workers=workers)
    source = simulated_source(sweep, workers=workers, search=search)
    return TrialLoop(
        scheduler=scheduler,
        source=source,
        backend=backend,
        decode=lambda config: decode_config(space, config),
        metric=sweep.metric,
        mode=sweep.mode,
        objectives=sweep.objectives or (Objective(sweep.metric, sweep.mode),),
        max_iterations=sweep.max_iterations,
        workers=workers,
        budget_iterations=budget_iterations,
        max_pending=simulated_max_pending(sweep, source),
        max_failures=sweep.max_failures,
        release_ended=scheduler_traits(sweep.scheduler, declared=sweep.scheduler_traits).only_stops,
        keep_reports=keep_reports,
    )
