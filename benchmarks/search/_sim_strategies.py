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
    "SYNETUNE_BOHB_SEEDS",
    "SYNETUNE_SLOW_SEEDS",
    "SYNETUNE_STRATEGIES",
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
        loop: ``loop(problem, seed=, budget=, workers=, trials=)`` instead of
            ``sweeplab.simulate``, for a strategy that is not a sweeplab Sweep (see
            `optuna_hyperband_run`); ``trials`` is the most trials it may start.
        model_based: Whether its searcher learns from results (such runs take longest: the
            benchmark starts them first).
        about: What it is, in a line (written to the JSON).
        seeds: The most seeds it runs (the run's first ones), for a strategy too slow to run
            them all; None: every seed.
        warm_up: Imports what its runs use, before the first (so that no run's time includes
            them), and quiets its libraries' logs.
        lcbench_only: Whether it runs on the LCBench tasks alone (the real learning curves),
            not on the synthetic problems.
    """

    name: str
    searcher: Callable[[CurveProblem], Any]
    scheduler: Callable[[CurveProblem], Any]
    early_stopping: bool
    loop: Callable[..., dict[str, Any]] | None = None
    model_based: bool = False
    about: str = ""
    seeds: int | None = None
    warm_up: Callable[[], None] | None = None
    lcbench_only: bool = False


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
    problem: CurveProblem, *, seed: int, budget: int, workers: int, trials: int
) -> dict[str, Any]:
    from benchmarks.search._optuna_hyperband import optuna_hyperband_run

    # Not capped: Hyperband's brackets spend more per trial than ASHA's, so the budget stops
    # it at about 100 trials, far below `trials`.
    return optuna_hyperband_run(problem, seed=seed, budget=budget, workers=workers)


def _synetune(
    name: str, problem: CurveProblem, *, seed: int, budget: int, workers: int, trials: int
) -> dict[str, Any]:
    from benchmarks.search._synetune import synetune_run

    return synetune_run(name, problem, seed=seed, budget=budget, workers=workers, trials=trials)


def _synetune_warm_up() -> None:
    from benchmarks.search._synetune import warm_up

    warm_up()


def _synetune_strategy(
    name: str, about: str, *, model_based: bool, early_stopping: bool = True, seeds: int | None
) -> SimStrategy:
    return SimStrategy(
        f"synetune-{name}",
        functools.partial(_given, None),
        functools.partial(_given, None),
        early_stopping=early_stopping,
        loop=functools.partial(_synetune, name),
        model_based=model_based,
        about=f"Syne Tune 0.16's {about} with its defaults, driven on simulated workers "
        "(benchmarks/search/_synetune.py, not sweeplab.simulate)",
        seeds=seeds,
        warm_up=_synetune_warm_up,
        lcbench_only=True,
    )


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

# Syne Tune's baselines run on the 10 LCBench dev tasks, the real curves they are the anchor
# on. Their model-based variants cost, per run on an LCBench task on an idle core: BOHB 2.6 s
# (SciPy's truncated normal draws one value per call), ASHA-BORE 30 s (500 candidates scored one
# XGBoost predict call each), ASHA-CQR 64 s (five boosted quantile regressors refitted at every
# suggestion), against 0.3 s for ASHA and 0.1-1.7 s for sweeplab's strategies. So that the
# default run fits its 15 minutes on 2 CPUs, BOHB runs the first SYNETUNE_BOHB_SEEDS seeds and
# BORE and CQR the first SYNETUNE_SLOW_SEEDS; `--all-seeds` runs them on every seed (the
# 20-seed comparison of search-notes.md, about an hour here).
SYNETUNE_BOHB_SEEDS = 5
SYNETUNE_SLOW_SEEDS = 1
SYNETUNE_STRATEGIES = [
    _synetune_strategy("asha", "ASHA (random search, stops trials)", model_based=False, seeds=None),
    _synetune_strategy(
        "bohb", "BOHB (KDE searcher + ASHA)", model_based=True, seeds=SYNETUNE_BOHB_SEEDS
    ),
    _synetune_strategy(
        "asha-bore", "ASHA-BORE (XGBoost classifier)", model_based=True, seeds=SYNETUNE_SLOW_SEEDS
    ),
    _synetune_strategy(
        "asha-cqr",
        "ASHA-CQR (conformal quantile regression)",
        model_based=True,
        seeds=SYNETUNE_SLOW_SEEDS,
    ),
    # The adapter's check, run when named: FIFO random search, the budget's 30 trials, to
    # compare with random+fifo.
    _synetune_strategy(
        "random", "RandomSearch (FIFO)", model_based=False, early_stopping=False, seeds=None
    ),
]

# OptunaSearcher settings to compare with the current default, by name. Fill from the options
# `sweeplab.OptunaSearcher` has (sweeplab/space/_optuna_searcher.py).
OPTUNA_VARIANTS: dict[str, dict[str, Any]] = {
    # The default before BOHB's recipe (a model of the rung that counts trials stopped below it
    # as bad, no random share), then each lever of issue 22 on its own, then the default under
    # other schedulers. `optuna+asha` is the default, OptunaSearcher(): BOHB's view and a third
    # random, after a random start (issue 42: random search's own configs until six trials per
    # parameter, and six more, have ended; 48 on LCBench).
    "optuna-previous+asha": {"rung_view": "pruned", "random_fraction": 0.0},
    "optuna-bohb-view+asha": {"random_fraction": 0.0},
    "optuna-random33+asha": {"rung_view": "pruned", "random_fraction": 1 / 3},
    "optuna-rung-weighting+asha": {"rung_weighting": True},
    "optuna-last-value+asha": {"aggregate": "last"},
    "optuna+asha-g3": {"grace": 3},
    "optuna-bohb-view+asha-g3": {"random_fraction": 0.0, "grace": 3},
    "optuna-rung-weighting+asha-g3": {"rung_weighting": True, "grace": 3},
    "optuna+adaptive-asha": {"scheduler": "adaptive-asha"},
    # Issue 42: the default before the random start (BOHB's third random from the first trial),
    # the candidate of issue 22; slower to random + FIFO's result (search-notes.md, 2026-12-06).
    "optuna-no-random-start+adaptive-asha": {"scheduler": "adaptive-asha", "random_start": 0},
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
        *SYNETUNE_STRATEGIES,
        *_VARIANTS.values(),
    ]
}
# Always run: the baseline, the reference of every check, and the grace search behind BEST_GRACE.
REFERENCES = (BASELINE.name, DEFAULT_ASHA.name)
# The benchmark run without --strategies: issue 22's baselines (random + FIFO, random + ASHA at
# grace 1 and the graces the best one is chosen from, random + adaptive ASHA, top-k, Optuna's own
# TPE + HyperbandPruner) and the candidate default, which is the current `searcher="optuna"`
# (OptunaSearcher(), with its random start since issue 42) under adaptive ASHA. The levers run
# when named (`--strategies NAME ...`): `optuna-previous+asha` (the default before BOHB's
# recipe), `optuna+asha` (the current searcher under grace-1 ASHA), measured on 2026-12-03, and
# `optuna-no-random-start+adaptive-asha` (the candidate before the random start), measured on
# 2026-12-06 (search-notes.md); each TPE strategy is about a fifth of the run's CPU. Syne
# Tune's ASHA, BOHB, ASHA-BORE and ASHA-CQR (issue 42) show where the candidate stands against
# the field on the LCBench tasks; BOHB on SYNETUNE_BOHB_SEEDS seeds, BORE and CQR on
# SYNETUNE_SLOW_SEEDS.
DEFAULT_SET = (
    "random+fifo",
    "random+asha",
    "random+asha-g3",
    "random+asha-g9",
    "random+adaptive-asha",
    "topk",
    "optuna-tpe+hyperband-pruner",
    "synetune-asha",
    "synetune-bohb",
    "synetune-asha-bore",
    "synetune-asha-cqr",
    "optuna+adaptive-asha",
)
