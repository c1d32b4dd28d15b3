"""Every named scheduler and searcher, each with all that sweeplab knows of it.

A name maps to an entry holding its builder (for a searcher, its compile function from
`sweeplab.space`), its traits, the rules a sweep using it must keep and its preview. The spec's
checks, the engine's Tuner, the scheduler traits, the trial plan and `build_tune_search` all read
these entries, so a strategy is added (or changed) here and nowhere else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from sweeplab.errors import SpecError
from sweeplab.space import (
    SearchCompiler,
    Space,
    TuneSearch,
    compile_grid_search,
    compile_hyperopt_search,
    compile_optuna_search,
    compile_random_search,
    pbt_mutable_paths,
)
from sweeplab.strategies._builders import (
    SchedulerSetup,
    build_adaptive_asha,
    build_asha,
    build_fifo,
    build_hyperband,
    build_median,
    build_pbt,
    compile_search,
    population_search,
)
from sweeplab.strategies._pbt_settings import pbt_settings
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

if TYPE_CHECKING:
    from sweeplab.pareto import Constraint, Objective

__all__ = [
    "SCHEDULERS",
    "SEARCHERS",
    "WARM_START_RULE",
    "SchedulerEntry",
    "SearcherEntry",
    "build_tune_search",
]

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
        compile: Its compile function: a space, metrics, seed and trial count to its
            `TuneSearch` (search algorithm, param space, num_samples).
        validate: The rule a sweep with it breaks, if any (checked by `sweeplab.Sweep`).
        takes_warm_start: Whether a warm start's configs can be tried first.
        repeats_grid: Whether each of the sweep's ``num_trials`` is a run over the whole grid
            (``space.grid_size`` trials), not one trial.
        multi_objective: Whether it takes a sweep with several metrics.
    """

    name: str
    compile: SearchCompiler
    validate: Rule
    takes_warm_start: bool
    repeats_grid: bool = False
    multi_objective: bool = False

    def build(self, sweep: StrategySweep) -> TuneSearch:
        """Its `TuneSearch` for the sweep: the sweep's space compiled by `compile`."""
        return compile_search(self.compile, sweep)


def _pbt_rule(sweep: StrategySweep) -> RuleBreak | None:
    if sweep.searcher not in ("random", "grid"):
        return RuleBreak(
            "searcher",
            "must be 'random' or 'grid' with scheduler='pbt' (PBT mutates the configs itself)",
            sweep.searcher,
        )
    settings = pbt_settings(sweep.scheduler)
    if settings.interval is not None and settings.interval >= sweep.max_iterations:
        return RuleBreak(
            "scheduler",
            f"must set PBT.interval below max_iterations ({sweep.max_iterations}): no round is "
            "held at a trial's last iteration",
            sweep.scheduler,
        )
    if settings.mutate is not None:
        mutable = pbt_mutable_paths(sweep.space)
        unknown = [path for path in settings.mutate if path not in mutable]
        if unknown:
            return RuleBreak(
                "scheduler",
                f"must set PBT.mutate to ranges and choices of the space "
                f"({', '.join(mutable) or 'it has none'}); {', '.join(map(repr, unknown))} "
                f"{'is' if len(unknown) == 1 else 'are'} not",
                sweep.scheduler,
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
                compile=compile_random_search,
                validate=no_rule,
                takes_warm_start=True,
            ),
            SearcherEntry(
                name="grid",
                multi_objective=True,
                compile=compile_grid_search,
                validate=_grid_rule,
                takes_warm_start=False,
                repeats_grid=True,
            ),
            SearcherEntry(
                name="optuna",
                multi_objective=True,
                compile=compile_optuna_search,
                validate=no_rule,
                takes_warm_start=True,
            ),
            SearcherEntry(
                name="hyperopt",
                compile=compile_hyperopt_search,
                validate=no_rule,
                takes_warm_start=True,
            ),
        )
    }
)


def build_tune_search(
    space: Space | Mapping[str, Any],
    searcher: str,
    *,
    metric: str,
    mode: str,
    seed: int | None,
    num_trials: int,
    objectives: Sequence[Objective] = (),
    constraints: Sequence[Constraint] = (),
) -> TuneSearch:
    """Compiles ``space`` for the named ``searcher``: its entry's compile function.

    Args:
        space: The search space.
        searcher: A name in `SEARCHERS`; what its compile function (a ``compile_*_search`` of
            `sweeplab.space`) builds is documented there.
        metric: The metric to optimise.
        mode: ``"min"`` or ``"max"``.
        seed: Seed for the searcher; the same seed gives the same suggestions.
        num_trials: Trials to run; for a searcher that repeats the grid
            (`SearcherEntry.repeats_grid`), the number of repeats of the grid.
        objectives: With several metrics, all of them (the first is ``metric`` and ``mode``),
            for a searcher that takes several (`SearcherEntry.multi_objective`).
        constraints: With several metrics, each bounding an objective.

    Raises:
        SpecError: If ``searcher``, ``mode`` or ``num_trials`` is not allowed, or ``searcher``
            cannot take ``objectives``.
    """
    space = Space(space)
    entry = SEARCHERS.get(searcher) if isinstance(searcher, str) else None
    if entry is None:
        raise SpecError(f"searcher must be one of {list(SEARCHERS)}, but got {searcher!r}.")
    return entry.compile(
        space,
        metric=metric,
        mode=mode,
        seed=seed,
        num_trials=num_trials,
        objectives=objectives,
        constraints=constraints,
    )
