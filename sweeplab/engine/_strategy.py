"""Ray Tune schedulers and searchers from a sweep's short names."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from sweeplab.engine._plan import (
    ASHA_REDUCTION_FACTOR,
    HYPERBAND_REDUCTION_FACTOR,
    median_grace,
    pbt_interval,
)
from sweeplab.engine._warm import WarmStartPlan
from sweeplab.spec import Sweep

__all__ = [
    "SchedulerTraits",
    "build_scheduler",
    "build_search",
    "scheduler_traits",
    "tune_trial_limit",
]

ExploitHook = Callable[[str, str, int, dict[str, Any]], None]


@dataclasses.dataclass(frozen=True, kw_only=True)
class SchedulerTraits:
    """What a Tune scheduler does to trials besides letting them run or stopping them.

    Attributes:
        pauses: It pauses trials and resumes them later (their actors, if reused, stay held).
        exploits: It replaces a trial's config and weights with another trial's (PBT).
    """

    pauses: bool
    exploits: bool


def scheduler_traits(scheduler: Any) -> SchedulerTraits:
    """The traits of a Tune scheduler object, from its class (a subclass has its base's).

    ASHA, median stopping (with ``hard_stop``) and FIFO only stop trials; synchronous
    HyperBand (and BOHB) pauses them; PBT (and PB2) pauses and exploits. A scheduler of
    another class is assumed to pause: reusing actors under a pausing scheduler was seen to
    wait forever for resources, while not reusing them only costs start-up time.
    """
    from ray.tune.schedulers import (
        AsyncHyperBandScheduler,
        FIFOScheduler,
        HyperBandScheduler,
        MedianStoppingRule,
        PopulationBasedTraining,
    )

    from sweeplab.engine._ray_compat import median_rule_stops_hard

    if isinstance(scheduler, PopulationBasedTraining):
        return SchedulerTraits(pauses=True, exploits=True)
    if isinstance(scheduler, HyperBandScheduler):
        return SchedulerTraits(pauses=True, exploits=False)
    if isinstance(scheduler, MedianStoppingRule):
        # `hard_stop=False` pauses instead of stopping.
        return SchedulerTraits(pauses=not median_rule_stops_hard(scheduler), exploits=False)
    if isinstance(scheduler, AsyncHyperBandScheduler) or type(scheduler) is FIFOScheduler:
        return SchedulerTraits(pauses=False, exploits=False)
    return SchedulerTraits(pauses=True, exploits=False)


def build_scheduler(
    sweep: Sweep,
    on_exploit: ExploitHook | None = None,
    *,
    exploit_dir: str = "pbt-exploits",
    max_running: int | None = None,
    keep_idle_actors: bool = False,
) -> Any:
    """The Tune scheduler of `sweep`; a configured scheduler object is used as given.

    ``max_running``: the sweep's concurrency, beyond which HyperBand and PBT resume no paused
    trial; ``keep_idle_actors``: whether Tune keeps that many idle trial actors for them, not
    one (see `ResumeWhenStalled`).
    """
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, MedianStoppingRule

    if not isinstance(sweep.scheduler, str):
        return sweep.scheduler
    max_t = sweep.max_iterations
    if sweep.scheduler == "asha":
        return ASHAScheduler(
            time_attr="training_iteration",
            max_t=max_t,
            grace_period=1,
            reduction_factor=ASHA_REDUCTION_FACTOR,
        )
    if sweep.scheduler == "hyperband":
        from sweeplab.engine._hyperband import HyperBand

        return HyperBand(
            time_attr="training_iteration",
            max_t=max_t,
            reduction_factor=HYPERBAND_REDUCTION_FACTOR,
            max_running=max_running,
            keep_idle_actors=keep_idle_actors,
        )
    if sweep.scheduler == "median":
        return MedianStoppingRule(
            time_attr="training_iteration",
            grace_period=median_grace(max_t),
            min_samples_required=3,
        )
    if sweep.scheduler == "pbt":
        return _make_pbt(sweep, on_exploit, exploit_dir, max_running, keep_idle_actors)
    return FIFOScheduler()


def _make_pbt(
    sweep: Sweep,
    on_exploit: ExploitHook | None,
    exploit_dir: str,
    max_running: int | None,
    keep_idle_actors: bool,
) -> Any:
    from sweeplab.engine._pbt import LineagePBT
    from sweeplab.space import pbt_explore_fn, pbt_mutations

    return LineagePBT(
        exploit_dir=exploit_dir,
        on_exploit=on_exploit,
        max_running=max_running,
        keep_idle_actors=keep_idle_actors,
        time_attr="training_iteration",
        perturbation_interval=pbt_interval(sweep.max_iterations),
        hyperparam_mutations=pbt_mutations(sweep.space),
        custom_explore_fn=pbt_explore_fn(sweep.space),
        quantile_fraction=0.25,
        resample_probability=0.25,
        # Asynchronous PBT compares a trial with the stale scores of paused trials whenever the
        # population outnumbers the slots, and was seen to exploit nothing; synchronous rounds
        # compare every trial at the same iteration.
        synch=True,
    )


def tune_trial_limit(
    traits: SchedulerTraits, *, concurrency: int, total_trials: int, waiting_holds_nothing: bool
) -> int:
    """How many trials Tune may hold at once (its `max_concurrent_trials`).

    Tune counts paused trials against this limit and creates trials only below it. A scheduler
    that pauses trials until the others catch up (HyperBand's brackets, PBT's rounds) then sees
    only `concurrency` trials and never compares more. Where a trial that waits holds no
    resources (on warm slots it holds nothing until it claims a slot; a one-worker trial waits
    in Tune's queue for its actor's CPUs), every trial is created up front, and the slots or
    the CPUs alone bound how many train at once.
    """
    if waiting_holds_nothing and (traits.pauses or traits.exploits):
        return max(concurrency, total_trials)
    return concurrency


def build_search(sweep: Sweep, warm_start: WarmStartPlan | None = None) -> Any:
    """The `TuneSearch` (search algorithm, param space, num_samples) of `sweep`.

    With a warm-start plan (see `plan_warm_start`), its configs are suggested first. An Optuna
    or HyperOpt searcher learns each trial as finished, stopped early, diverged or errored
    (see `TrialFeedbackSearcher`), not every trial's last value as a final one.
    """
    from sweeplab.engine._searcher_feedback import with_trial_feedback
    from sweeplab.space import OptunaSearcher, TuneSearch, build_tune_search

    if isinstance(sweep.searcher, OptunaSearcher):
        alg = sweep.searcher.build(
            sweep.space,
            metric=sweep.metric,
            mode=sweep.mode,
            seed=sweep.seed,
            num_trials=sweep.num_trials,
        )
        search = TuneSearch(search_alg=alg, param_space={}, num_samples=sweep.num_trials)
    elif not isinstance(sweep.searcher, str):
        search = TuneSearch(search_alg=sweep.searcher, param_space={}, num_samples=sweep.num_trials)
    else:
        # PBT refuses search algorithms other than Tune's variant generator, which the grid
        # compilation uses (a space without grid parameters is then sampled randomly, seeded).
        searcher = "grid" if sweep.scheduler == "pbt" else sweep.searcher
        search = build_tune_search(
            sweep.space,
            searcher,
            metric=sweep.metric,
            mode=sweep.mode,
            seed=sweep.seed,
            num_trials=sweep.num_trials,
        )
        if sweep.scheduler == "pbt":
            from sweeplab.engine._pbt import PopulationVariantGenerator

            # The grid's variant generator, seeded alike, keeping the population's actors.
            search = dataclasses.replace(
                search, search_alg=PopulationVariantGenerator(random_state=sweep.seed)
            )
    search = dataclasses.replace(
        search,
        search_alg=with_trial_feedback(
            search.search_alg,
            metric=sweep.metric,
            mode=sweep.mode,
            max_iterations=sweep.max_iterations,
        ),
    )
    if warm_start is None or not warm_start.configs:
        return search
    from sweeplab.engine._warm_searcher import WarmStartSearcher

    return TuneSearch(
        search_alg=WarmStartSearcher(
            search.search_alg,
            [warm.config for warm in warm_start.configs],
            metric=sweep.metric,
            mode=sweep.mode,
            # Only sweeplab's own compilations have a known encoding to add history in.
            space=sweep.space if isinstance(sweep.searcher, (str, OptunaSearcher)) else None,
            max_iterations=sweep.max_iterations,
        ),
        param_space=search.param_space,
        num_samples=search.num_samples,
    )
