"""The strategies of the simulated search benchmark: for a curve problem, a searcher and a
scheduler (what a `sweeplab.Sweep` gets), or a loop of their own.

Every strategy is picklable (module-level functions and `functools.partial`), so the benchmark's
worker processes receive it whole; a variant made on the command line runs there too.

To compare another `sweeplab.OptunaSearcher` setting, add a line to :data:`OPTUNA_VARIANTS`
(name -> keyword arguments); a variant whose options this sweeplab does not have is listed in
the JSON as skipped, not run.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any

from benchmarks.search.curves import CurveProblem
from sweeplab import OptunaSearcher

__all__ = [
    "ASHA_GRACES",
    "BASELINE",
    "BEST_GRACE",
    "DEFAULT_ASHA",
    "DEFAULT_SET",
    "OPTUNA_VARIANTS",
    "REFERENCES",
    "STRATEGIES",
    "SimStrategy",
    "optuna_variant",
    "optuna_variants",
]

ASHA_REDUCTION_FACTOR = 3  # sweeplab's ASHA: grace 1, reduction factor 3
ASHA_GRACES = (1, 3, 9)


@dataclasses.dataclass(frozen=True)
class SimStrategy:
    """One way to search a curve problem.

    Attributes:
        name: Short name, as in the table and the JSON.
        searcher: ``searcher(problem)``: the Sweep's ``searcher`` (a name or a fresh object).
        scheduler: ``scheduler(problem)``: the Sweep's ``scheduler`` (a name or a fresh object).
        early_stopping: Whether it stops trials early: it gets enough trials to spend the
            budget, and the budget stops it; otherwise it gets exactly the budget's trials.
        loop: ``loop(problem, seed=, budget=, workers=)`` instead of ``sweeplab.simulate``, for
            a strategy that is not a sweeplab Sweep (see `optuna_hyperband_run`).
        model_based: Whether its searcher learns from results (such runs take longest: the
            benchmark starts them first).
        about: What it is, in a line (written to the JSON).
    """

    name: str
    searcher: Callable[[CurveProblem], Any]
    scheduler: Callable[[CurveProblem], Any]
    early_stopping: bool
    loop: Callable[..., dict[str, Any]] | None = None
    model_based: bool = False
    about: str = ""


def _given(value: Any, problem: CurveProblem) -> Any:
    return value


def _asha(grace: int, problem: CurveProblem) -> Any:
    from ray.tune.schedulers import ASHAScheduler

    return ASHAScheduler(
        time_attr="training_iteration",
        max_t=problem.max_iterations,
        grace_period=grace,
        reduction_factor=ASHA_REDUCTION_FACTOR,
    )


def _topk(problem: CurveProblem) -> Any:
    from benchmarks.search._topk import TopKScheduler, topk_iterations

    return TopKScheduler(k=topk_iterations(problem.max_iterations))


def _optuna_searcher(options: tuple[tuple[str, Any], ...], problem: CurveProblem) -> Any:
    return OptunaSearcher(**dict(options))


def _optuna_hyperband(
    problem: CurveProblem, *, seed: int, budget: int, workers: int
) -> dict[str, Any]:
    from benchmarks.search._optuna_hyperband import optuna_hyperband_run

    return optuna_hyperband_run(problem, seed=seed, budget=budget, workers=workers)


def optuna_variant(
    name: str, scheduler: str = "asha", grace: int | None = None, **options: Any
) -> SimStrategy:
    """A strategy of ``OptunaSearcher(**options)`` under a named scheduler, or under ASHA with
    grace period `grace` (reduction factor 3).

    Raises:
        sweeplab.SpecError: If `options` are not `OptunaSearcher`'s (checked here, at once).
    """
    OptunaSearcher(**options)
    return SimStrategy(
        name=name,
        searcher=functools.partial(_optuna_searcher, tuple(sorted(options.items()))),
        scheduler=(
            functools.partial(_given, scheduler)
            if grace is None
            else functools.partial(_asha, grace)
        ),
        early_stopping=scheduler != "fifo",
        model_based=True,
        about=f"OptunaSearcher({', '.join(f'{k}={v!r}' for k, v in sorted(options.items()))})"
        f" + {scheduler}" + ("" if grace is None else f" (grace {grace})"),
    )


BASELINE = SimStrategy(
    "random+fifo",
    functools.partial(_given, "random"),
    functools.partial(_given, "fifo"),
    early_stopping=False,
    about="random search, every trial trains max_iterations (the budget's 30 trials)",
)
DEFAULT_ASHA = SimStrategy(
    "random+asha",
    functools.partial(_given, "random"),
    functools.partial(_given, "asha"),
    early_stopping=True,
    about="random search + sweeplab's ASHA (grace 1, reduction factor 3)",
)
# Derived, not run: the grace of ASHA_GRACES that did best on each problem, on the same seeds.
BEST_GRACE = "random+asha-best-grace"
_GRACE_STRATEGIES = [
    SimStrategy(
        f"random+asha-g{grace}",
        functools.partial(_given, "random"),
        functools.partial(_asha, grace),
        early_stopping=True,
        about=f"random search + ASHA, grace {grace}, reduction factor 3",
    )
    for grace in ASHA_GRACES
    if grace != 1  # grace 1 is DEFAULT_ASHA
]

# OptunaSearcher settings to compare with the current default, by name. Fill from the options
# `sweeplab.OptunaSearcher` has (sweeplab/space/_optuna_searcher.py).
OPTUNA_VARIANTS: dict[str, dict[str, Any]] = {
    # The previous default (a model of the rung that counts trials stopped below it as bad, no
    # random share), then each lever of issue 22 on its own, then the default under other
    # schedulers. `optuna+asha` is the default, OptunaSearcher(): BOHB's view and a third random.
    "optuna-previous+asha": {"rung_view": "pruned", "random_fraction": 0.0},
    "optuna-bohb-view+asha": {"random_fraction": 0.0},
    "optuna-random33+asha": {"rung_view": "pruned", "random_fraction": 1 / 3},
    "optuna-rung-weighting+asha": {"rung_weighting": True},
    "optuna-last-value+asha": {"aggregate": "last"},
    "optuna+asha-g3": {"grace": 3},
    "optuna-bohb-view+asha-g3": {"random_fraction": 0.0, "grace": 3},
    "optuna-rung-weighting+asha-g3": {"rung_weighting": True, "grace": 3},
    "optuna+adaptive-asha": {"scheduler": "adaptive-asha"},
}


def optuna_variants(
    variants: Mapping[str, Mapping[str, Any]] = OPTUNA_VARIANTS,
) -> tuple[dict[str, SimStrategy], dict[str, str]]:
    """The strategies of `variants`, and why each that cannot be built was skipped."""
    from sweeplab import SweeplabError

    made, skipped = {}, {}
    for name, options in variants.items():
        try:
            made[name] = optuna_variant(name, **options)
        except (TypeError, SweeplabError) as error:
            skipped[name] = f"{type(error).__name__}: {error}"
    return made, skipped


_VARIANTS, SKIPPED_VARIANTS = optuna_variants()

STRATEGIES: dict[str, SimStrategy] = {
    s.name: s
    for s in [
        BASELINE,
        DEFAULT_ASHA,
        *_GRACE_STRATEGIES,
        SimStrategy(
            "random+adaptive-asha",
            functools.partial(_given, "random"),
            functools.partial(_given, "adaptive-asha"),
            early_stopping=True,
            about="random search + sweeplab's adaptive ASHA (rung 1 on probation, rf 3)",
        ),
        SimStrategy(
            "topk",
            functools.partial(_given, "random"),
            _topk,
            early_stopping=True,
            about="random search; every trial trains k = max_iterations/9 iterations, the top "
            "third so far at k train to the end (Egele et al. 2023)",
        ),
        SimStrategy(
            "optuna+asha",
            functools.partial(_given, "optuna"),
            functools.partial(_given, "asha"),
            early_stopping=True,
            model_based=True,
            about="sweeplab's searcher='optuna' (OptunaSearcher()) + sweeplab's ASHA",
        ),
        SimStrategy(
            "optuna-tpe+hyperband-pruner",
            functools.partial(_given, None),
            functools.partial(_given, None),
            early_stopping=True,
            loop=_optuna_hyperband,
            model_based=True,
            about="Optuna's own TPESampler + HyperbandPruner in an ask/tell loop on simulated "
            "workers (not sweeplab.simulate)",
        ),
        *_VARIANTS.values(),
    ]
}
# Always run: the baseline, the reference of every check, and the grace search behind BEST_GRACE.
REFERENCES = (BASELINE.name, DEFAULT_ASHA.name)
# The benchmark run without --strategies: issue 22's baselines (random + FIFO, random + ASHA at
# grace 1 and the graces the best one is chosen from, random + adaptive ASHA, top-k, Optuna's own
# TPE + HyperbandPruner) and the candidate default, which is the current `searcher="optuna"`
# (OptunaSearcher()) under adaptive ASHA. The levers run when named (`--strategies NAME ...`):
# `optuna-previous+asha` (the default before BOHB's recipe) and `optuna+asha` (the current
# searcher under grace-1 ASHA), measured on 2026-12-03 (search-notes.md); each TPE strategy is
# about a fifth of the run's CPU.
DEFAULT_SET = (
    "random+fifo",
    "random+asha",
    "random+asha-g3",
    "random+asha-g9",
    "random+adaptive-asha",
    "topk",
    "optuna-tpe+hyperband-pruner",
    "optuna+adaptive-asha",
)
