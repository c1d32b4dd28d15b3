"""Every named scheduler and searcher, each with all that sweeplab knows of it.

A name maps to an entry holding its builder, its traits, the rules a sweep using it must keep
and its preview. The spec's checks, the engine's Tuner, the scheduler traits and the trial plan
all read these entries, so a strategy is added (or changed) here and nowhere else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from sweeplab.space import TuneSearch
from sweeplab.strategies._builders import (
    SchedulerSetup,
    build_adaptive_asha,
    build_asha,
    build_fifo,
    build_hyperband,
    build_median,
    build_pbt,
    compiled_search,
    population_search,
)
from sweeplab.strategies._schedule import (
    PlanInputs,
    TrialPlan,
    adaptive_asha_plan,
    asha_plan,
    fifo_plan,
    hyperband_plan,
    median_plan,
    pbt_plan,
)
from sweeplab.strategies._sweep import RuleBreak, StrategySweep
from sweeplab.strategies._traits import SchedulerTraits

__all__ = ["SCHEDULERS", "SEARCHERS", "WARM_START_RULE", "SchedulerEntry", "SearcherEntry"]

Rule = Callable[[StrategySweep], RuleBreak | None]
SearchBuilder = Callable[[StrategySweep], TuneSearch]

# Why a grid search or PBT takes no warm start (the same words for either).
WARM_START_RULE = (
    "needs a searcher ('random', 'optuna', 'hyperopt'); grid search and PBT draw their own "
    "population"
)


def no_rule(sweep: StrategySweep) -> RuleBreak | None:
    """The validation of a strategy that asks nothing of the rest of the sweep."""
    return None


@dataclasses.dataclass(frozen=True, kw_only=True)
class SchedulerEntry:
    """A named scheduler.

    Attributes:
        name: Its name in ``Sweep(scheduler=...)``.
        traits: Whether it pauses trials and exploits them (the scheduler it builds has them).
        build: Its Tune scheduler, from the sweep and what the engine hands it.
        validate: The rule a sweep with it breaks, if any (checked by `sweeplab.Sweep`).
        preview: Its rungs, budget in iterations and one-line summary.
        takes_warm_start: Whether a warm start's configs can be tried first.
        population: Where it draws its own population (PBT), the search that does, used
            instead of the searcher's; None: the searcher's.
        multi_objective: Whether it takes a sweep with several metrics.
    """

    name: str
    traits: SchedulerTraits
    build: Callable[[StrategySweep, SchedulerSetup], Any]
    validate: Rule
    preview: Callable[[PlanInputs], TrialPlan]
    takes_warm_start: bool = True
    population: SearchBuilder | None = None
    multi_objective: bool = False


@dataclasses.dataclass(frozen=True, kw_only=True)
class SearcherEntry:
    """A named searcher.

    Attributes:
        name: Its name in ``Sweep(searcher=...)``.
        build: Its `TuneSearch` (search algorithm, param space, num_samples) for the sweep.
        validate: The rule a sweep with it breaks, if any (checked by `sweeplab.Sweep`).
        takes_warm_start: Whether a warm start's configs can be tried first.
        repeats_grid: Whether each of the sweep's ``num_trials`` is a run over the whole grid
            (``space.grid_size`` trials), not one trial.
        multi_objective: Whether it takes a sweep with several metrics.
    """

    name: str
    build: SearchBuilder
    validate: Rule
    takes_warm_start: bool
    repeats_grid: bool = False
    multi_objective: bool = False


def _pbt_rule(sweep: StrategySweep) -> RuleBreak | None:
    if sweep.searcher not in ("random", "grid"):
        return RuleBreak(
            "searcher",
            "must be 'random' or 'grid' with scheduler='pbt' (PBT mutates the configs itself)",
            sweep.searcher,
        )
    return None


def _grid_rule(sweep: StrategySweep) -> RuleBreak | None:
    if sweep.space.grid_size == 1:
        return RuleBreak(
            "searcher", "'grid' needs at least one `grid(...)` parameter in the space", "grid"
        )
    return None


_STOP_ONLY = SchedulerTraits(pauses=False, exploits=False)

SCHEDULERS: Mapping[str, SchedulerEntry] = MappingProxyType(
    {
        entry.name: entry
        for entry in (
            SchedulerEntry(
                name="fifo",
                multi_objective=True,
                traits=_STOP_ONLY,
                build=build_fifo,
                validate=no_rule,
                preview=fifo_plan,
            ),
            SchedulerEntry(
                name="asha",
                multi_objective=True,
                traits=_STOP_ONLY,
                build=build_asha,
                validate=no_rule,
                preview=asha_plan,
            ),
            SchedulerEntry(
                name="adaptive-asha",
                traits=_STOP_ONLY,
                build=build_adaptive_asha,
                validate=no_rule,
                preview=adaptive_asha_plan,
            ),
            SchedulerEntry(
                name="hyperband",
                traits=SchedulerTraits(pauses=True, exploits=False),
                build=build_hyperband,
                validate=no_rule,
                preview=hyperband_plan,
            ),
            SchedulerEntry(
                name="median",
                # Built with `hard_stop=True`: a trial below the median stops, never pauses.
                traits=_STOP_ONLY,
                build=build_median,
                validate=no_rule,
                preview=median_plan,
            ),
            SchedulerEntry(
                name="pbt",
                traits=SchedulerTraits(pauses=True, exploits=True),
                build=build_pbt,
                validate=_pbt_rule,
                preview=pbt_plan,
                takes_warm_start=False,
                population=population_search,
            ),
        )
    }
)

SEARCHERS: Mapping[str, SearcherEntry] = MappingProxyType(
    {
        entry.name: entry
        for entry in (
            SearcherEntry(
                name="random",
                multi_objective=True,
                build=compiled_search("random"),
                validate=no_rule,
                takes_warm_start=True,
            ),
            SearcherEntry(
                name="grid",
                multi_objective=True,
                build=compiled_search("grid"),
                validate=_grid_rule,
                takes_warm_start=False,
                repeats_grid=True,
            ),
            SearcherEntry(
                name="optuna",
                multi_objective=True,
                build=compiled_search("optuna"),
                validate=no_rule,
                takes_warm_start=True,
            ),
            SearcherEntry(
                name="hyperopt",
                build=compiled_search("hyperopt"),
                validate=no_rule,
                takes_warm_start=True,
            ),
        )
    }
)
