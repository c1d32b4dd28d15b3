"""A sweep's strategy, read from the registry: its rules, scheduler, search, traits and plan."""

from __future__ import annotations

import dataclasses
from typing import Any

from sweeplab.space import OptunaSearcher, TuneSearch
from sweeplab.strategies._builders import SchedulerSetup
from sweeplab.strategies._pbt_settings import PBT
from sweeplab.strategies._registry import (
    SCHEDULERS,
    SEARCHERS,
    WARM_START_RULE,
    SchedulerEntry,
    SearcherEntry,
)
from sweeplab.strategies._schedule import PlanInputs, TrialPlan
from sweeplab.strategies._sweep import RuleBreak, StrategySweep
from sweeplab.strategies._traits import SchedulerTraits, object_traits

__all__ = [
    "build_scheduler",
    "build_search",
    "scheduler_traits",
    "strategy_rule_break",
    "total_trials",
    "trial_plan",
]


def _named_entry(scheduler: Any) -> SchedulerEntry | None:
    """The registry's entry of a scheduler name (a `PBT` is ``"pbt"``'s); None for a
    configured scheduler object."""
    if isinstance(scheduler, PBT):
        return SCHEDULERS["pbt"]
    return SCHEDULERS[scheduler] if isinstance(scheduler, str) else None


def _scheduler_entry(sweep: StrategySweep) -> SchedulerEntry | None:
    """The registry's entry of the sweep's scheduler; None for a configured scheduler object."""
    return _named_entry(sweep.scheduler)


def _searcher_entry(sweep: StrategySweep) -> SearcherEntry | None:
    """The registry's entry of the sweep's searcher; None for a configured searcher object."""
    return SEARCHERS[sweep.searcher] if isinstance(sweep.searcher, str) else None


def strategy_rule_break(sweep: StrategySweep) -> RuleBreak | None:
    """The first rule of its strategies that `sweep` breaks, or None.

    The sweep's scheduler and searcher are known names or configured objects (the Sweep checks
    those fields first). The rules: a warm start needs strategies that take one; each named
    strategy's own rule, the scheduler's first; a configured scheduler object's traits must be
    known (see `scheduler_traits`), and must not exploit: an exploit replaces a trial's config
    and weights through the trial loop, which only sweeplab's own PBT (``"pbt"``) asks.
    """
    scheduler, searcher = _scheduler_entry(sweep), _searcher_entry(sweep)
    entries = [entry for entry in (searcher, scheduler) if entry is not None]
    if len(sweep.objectives) > 1:
        broken = _multi_objective_rule(sweep, scheduler, searcher)
        if broken is not None:
            return broken
    elif isinstance(sweep.searcher, OptunaSearcher):
        rule = sweep.searcher.single_objective_rule()
        if rule is not None:
            return RuleBreak("searcher", rule, sweep.searcher)
    if sweep.warm_start is not None and not all(entry.takes_warm_start for entry in entries):
        return RuleBreak("warm_start", WARM_START_RULE, sweep.warm_start)
    for entry in entries[::-1]:
        broken = entry.validate(sweep)
        if broken is not None:
            return broken
    if scheduler is None:
        traits = object_traits(sweep.scheduler, sweep.scheduler_traits)
        if isinstance(traits, RuleBreak):
            return traits
        if traits.exploits:
            return RuleBreak("scheduler", _EXPLOITS_RULE, sweep.scheduler)
    return None


# Ray Tune's PopulationBasedTraining and PB2 exploit by reaching into Tune's own controller,
# which sweeplab no longer runs (docs/search.md, "Population Based Training").
_EXPLOITS_RULE = (
    "must not be a configured scheduler that exploits trials (Ray Tune's PopulationBasedTraining "
    "or PB2): they exploit through Ray Tune's own controller, and sweeplab runs its trial loop; "
    "name scheduler='pbt' for sweeplab's synchronous PBT, which mutates every range and choice "
    "of the space"
)


def _multi_objective_rule(
    sweep: StrategySweep, scheduler: SchedulerEntry | None, searcher: SearcherEntry | None
) -> RuleBreak | None:
    """Which strategies take several metrics: the registry's, and OptunaSearcher's samplers."""
    if scheduler is None or not scheduler.multi_objective:
        names = [e.name for e in SCHEDULERS.values() if e.multi_objective]
        return RuleBreak(
            "scheduler",
            f"must be one of {names} with several metrics (the others compare one metric)",
            sweep.scheduler,
        )
    if searcher is not None and not searcher.multi_objective:
        names = [e.name for e in SEARCHERS.values() if e.multi_objective]
        return RuleBreak(
            "searcher",
            f"must be one of {names} (or a configured one) with several metrics",
            sweep.searcher,
        )
    if isinstance(sweep.searcher, OptunaSearcher):
        rule = sweep.searcher.multi_objective_rule()
        if rule is not None:
            return RuleBreak("searcher", rule, sweep.searcher)
    return None


def scheduler_traits(scheduler: Any, *, declared: SchedulerTraits | None = None) -> SchedulerTraits:
    """The traits of a scheduler: a name's from the registry, a configured object's as declared.

    A configured object's traits are, in this order, `declared` (the Sweep's
    ``scheduler_traits`` field), its ``sweeplab_traits`` attribute, or those of its Tune class:
    ASHA, median stopping (with ``hard_stop``) and FIFO only stop trials; synchronous HyperBand
    (and BOHB) pauses them; PBT (and PB2) pauses and exploits. They are never guessed.

    Raises:
        SpecError: If `scheduler` is an object of another class and declares no traits.
    """
    entry = _named_entry(scheduler)
    if entry is not None:
        return entry.traits
    traits = object_traits(scheduler, declared)
    if isinstance(traits, RuleBreak):
        raise traits.error()
    return traits


def build_scheduler(sweep: StrategySweep, *, max_running: int | None = None) -> Any:
    """The scheduler of `sweep` (Tune's classes and sweeplab's own, which the trial loop asks
    as Tune's controller would); a configured scheduler object is used as given.

    ``max_running``: the sweep's concurrency, beyond which HyperBand and PBT resume no paused
    trial (see `ResumeWhenStalled`).
    """
    entry = _scheduler_entry(sweep)
    if entry is None:
        return sweep.scheduler
    return entry.build(sweep, SchedulerSetup(max_running=max_running))


def build_search(sweep: StrategySweep) -> TuneSearch:
    """The `TuneSearch` (search algorithm, param space, num_samples) of `sweep`.

    An Optuna or HyperOpt searcher learns each trial as finished, stopped early, diverged or
    errored (see `TrialFeedbackSearcher`), not every trial's last value as a final one; with
    several metrics, by the values of its last report that holds them all. A warm start is the
    engine's to add.
    """
    from sweeplab.strategies._searcher_feedback import with_trial_feedback

    if isinstance(sweep.searcher, OptunaSearcher):
        alg = sweep.searcher.build(
            sweep.space,
            metric=sweep.metric,
            mode=sweep.mode,
            seed=sweep.seed,
            num_trials=sweep.num_trials,
            objectives=sweep.objectives,
            constraints=sweep.constraints,
        )
        search = TuneSearch(search_alg=alg, param_space={}, num_samples=sweep.num_trials)
    elif not isinstance(sweep.searcher, str):
        search = TuneSearch(search_alg=sweep.searcher, param_space={}, num_samples=sweep.num_trials)
    else:
        scheduler = _scheduler_entry(sweep)
        population = scheduler.population if scheduler is not None else None
        search = (population or SEARCHERS[sweep.searcher].build)(sweep)
    return dataclasses.replace(
        search,
        search_alg=with_trial_feedback(
            search.search_alg,
            metric=sweep.metric,
            mode=sweep.mode,
            max_iterations=sweep.max_iterations,
            objectives=sweep.objectives,
        ),
    )


def total_trials(sweep: StrategySweep) -> int:
    """The trials `sweep` creates: `num_trials`, or for a grid that many repeats of the grid."""
    searcher = _searcher_entry(sweep)
    repeats_grid = searcher is not None and searcher.repeats_grid
    return sweep.num_trials * (sweep.space.grid_size if repeats_grid else 1)


def trial_plan(
    sweep: StrategySweep,
    *,
    concurrency: int | None = None,
    waiting_holds_nothing: bool | None = None,
) -> TrialPlan:
    """The rungs of the sweep's schedule, its total budget in iterations, and a one-line summary.

    `concurrency` (trials at once, from the resource plan) only adds to the summary; so does
    `waiting_holds_nothing` (whether a waiting trial holds no resources, from the trial mode):
    False adds the caveat that a pausing scheduler compares only the trials that run at once.
    None leaves either out.
    """
    # A configured scheduler object's schedule is its own: the plan says only the budget.
    entry = _scheduler_entry(sweep) or SCHEDULERS["fifo"]
    return entry.preview(
        PlanInputs(
            trials=total_trials(sweep),
            max_iterations=sweep.max_iterations,
            concurrency=concurrency,
            waiting_holds_nothing=waiting_holds_nothing,
            settings=sweep.scheduler if isinstance(sweep.scheduler, PBT) else None,
        )
    )
