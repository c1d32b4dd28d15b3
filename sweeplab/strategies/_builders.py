"""The Tune scheduler and search of each named strategy (Ray is imported only when one is built)."""

from __future__ import annotations

import dataclasses
from typing import Any

from sweeplab.space import SearchCompiler, TuneSearch, compile_grid_search
from sweeplab.strategies._schedule import (
    ASHA_REDUCTION_FACTOR,
    HYPERBAND_REDUCTION_FACTOR,
    median_grace,
)
from sweeplab.strategies._sweep import StrategySweep

__all__ = [
    "SchedulerSetup",
    "build_adaptive_asha",
    "build_asha",
    "build_fifo",
    "build_hyperband",
    "build_median",
    "build_pbt",
    "compile_search",
    "population_search",
]


@dataclasses.dataclass(frozen=True, kw_only=True)
class SchedulerSetup:
    """What the engine hands a scheduler besides the sweep.

    Attributes:
        max_running: The sweep's concurrency, beyond which HyperBand and PBT resume no paused
            trial.
    """

    max_running: int | None = None


def build_fifo(sweep: StrategySweep, setup: SchedulerSetup) -> Any:
    from ray.tune.schedulers import FIFOScheduler

    return FIFOScheduler()


def build_asha(sweep: StrategySweep, setup: SchedulerSetup) -> Any:
    """Tune's ASHA; with several objectives, `MultiObjectiveASHA` on the same rungs."""
    from ray.tune.schedulers import ASHAScheduler

    if len(sweep.objectives) > 1:
        from sweeplab.strategies._mo_asha import MultiObjectiveASHA

        return MultiObjectiveASHA(
            objectives=sweep.objectives,
            time_attr="training_iteration",
            max_t=sweep.max_iterations,
            grace_period=1,
            reduction_factor=ASHA_REDUCTION_FACTOR,
        )
    return ASHAScheduler(
        time_attr="training_iteration",
        max_t=sweep.max_iterations,
        grace_period=1,
        reduction_factor=ASHA_REDUCTION_FACTOR,
    )


def build_adaptive_asha(sweep: StrategySweep, setup: SchedulerSetup) -> Any:
    """`AdaptiveASHA` on ASHA's rungs: the first one on probation."""
    from sweeplab.strategies._adaptive_asha import AdaptiveASHA

    return AdaptiveASHA(
        objectives=sweep.objectives,
        time_attr="training_iteration",
        max_t=sweep.max_iterations,
        reduction_factor=ASHA_REDUCTION_FACTOR,
    )


def build_hyperband(sweep: StrategySweep, setup: SchedulerSetup) -> Any:
    from sweeplab.strategies._hyperband import HyperBand

    return HyperBand(
        time_attr="training_iteration",
        max_t=sweep.max_iterations,
        reduction_factor=HYPERBAND_REDUCTION_FACTOR,
        max_running=setup.max_running,
    )


def build_median(sweep: StrategySweep, setup: SchedulerSetup) -> Any:
    from ray.tune.schedulers import MedianStoppingRule

    return MedianStoppingRule(
        time_attr="training_iteration",
        grace_period=median_grace(sweep.max_iterations),
        min_samples_required=3,
    )


def build_pbt(sweep: StrategySweep, setup: SchedulerSetup) -> Any:
    """sweeplab's synchronous PBT (`LoopPBT`), which exploits through the trial loop, with
    the sweep's `PBT` settings (``"pbt"``: the defaults)."""
    from sweeplab.space import pbt_explore_fn, pbt_mutations
    from sweeplab.strategies._pbt_settings import pbt_settings
    from sweeplab.strategies._sync_pbt import LoopPBT

    settings = pbt_settings(sweep.scheduler)
    # Synchronous rounds: asynchronous PBT compares a trial with the stale scores of paused
    # trials whenever the population outnumbers the slots, and was seen to exploit nothing.
    return LoopPBT(
        interval=settings.interval_for(sweep.max_iterations),
        max_iterations=sweep.max_iterations,
        mutations=pbt_mutations(sweep.space, only=settings.mutate),
        explore=pbt_explore_fn(sweep.space),
        quantile_fraction=settings.quantile_fraction,
        resample_probability=settings.resample_probability,
        seed=sweep.seed,
    )


def compile_search(compiler: SearchCompiler, sweep: StrategySweep) -> TuneSearch:
    """The `TuneSearch` that `compiler` makes of the sweep's space, metrics, seed and trials."""
    return compiler(
        sweep.space,
        metric=sweep.metric,
        mode=sweep.mode,
        seed=sweep.seed,
        num_trials=sweep.num_trials,
        objectives=sweep.objectives,
        constraints=sweep.constraints,
    )


def population_search(sweep: StrategySweep) -> TuneSearch:
    """PBT's population: the grid compilation's search, Tune's variant generator seeded alike
    (a space without grid parameters is then sampled randomly)."""
    return compile_search(compile_grid_search, sweep)
