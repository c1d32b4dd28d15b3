"""Optuna searchers for early-stopped sweeps: TPE, GP or NSGA-II, with BOHB's rung rule.

:class:`OptunaSearcher` is the user-facing recipe: ``Sweep(searcher=OptunaSearcher(...))``, compiled
against the sweep's own space, metric, mode, seed and trial count. ``searcher="optuna"`` is
``OptunaSearcher()``. The defaults are what the search benchmarks measured best
(docs/search.md): BOHB's own recipe, a model of the highest rung that knows only the trials
observed there (``rung_view="bohb"``) and a third of the trials drawn at random
(``random_fraction``), after a start that is random search (``random_start``). The other levers
(``rung_weighting``, ``aggregate``) are off.

With several metrics (``Sweep(metric=[...], mode=[...])``) the sampler models the objectives
together (Optuna's multi-objective TPE, GP or NSGA-II), and the sweep's constraints through
Optuna's ``constraints_func`` (see :mod:`sweeplab.space._optuna_mo`). The rung rule models one
metric's intermediate values, so it is not applied there, and its levers must keep their
defaults (`OptunaSearcher.multi_objective_rule`).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import math
import re
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sweeplab.errors import SpecError

if TYPE_CHECKING:
    from sweeplab.pareto import Constraint, Objective
    from sweeplab.space._space import Space

__all__ = [
    "AGGREGATES",
    "SAMPLERS",
    "VIEWS",
    "OptunaSearcher",
    "handover_trials",
    "rung_min_points",
    "startup_trials",
]

SAMPLERS = ("tpe", "gp", "nsga2")
VIEWS = ("bohb", "pruned")
DEFAULT_VIEW = "bohb"
# BOHB's share of random configs (Falkner et al., 2018), the default with one metric.
BOHB_RANDOM_FRACTION = 1 / 3
AGGREGATES = ("rung", "last")
# Ended trials of random search per parameter (and one more) before the model proposes: random
# search reached random + FIFO's result after a median of 21-37 ended trials on the simulated
# LCBench tasks (7 parameters), so 48 leaves it the start (benchmarks/results/search-notes.md).
HANDOVER_PER_DIMENSION = 6


def startup_trials(num_trials: int) -> int:
    """Random trials before the model takes over: a tenth of the sweep, between 4 and 10.

    Optuna's fixed 10 is a sixth of a 60-trial ASHA sweep and all of a 10-trial one.
    """
    return max(4, min(10, num_trials // 10))


def handover_trials(num_trials: int, dimensions: int) -> int:
    """The default ``random_start`` with one metric: six ended trials per parameter, and six
    more, before the model proposes; at most a third of the sweep, so that the model gets the
    rest of a small one.
    """
    return min(HANDOVER_PER_DIMENSION * (dimensions + 1), num_trials // 3)


def rung_min_points(num_trials: int, dimensions: int) -> int:
    """The rung rule's default ``min_points``: ended trials that must have reported a step
    before it is modelled (the start-up trials, and one more than the space has parameters).

    The report reads a sweep at the same rung by default.
    """
    return max(startup_trials(num_trials), dimensions + 1)


@dataclasses.dataclass(frozen=True)
class OptunaSearcher:
    """An Optuna searcher compiled against the sweep: ``Sweep(searcher=OptunaSearcher(...))``.

    ``searcher="optuna"`` is ``OptunaSearcher()``.

    Attributes:
        sampler: ``"tpe"`` (Optuna's TPE: multivariate, constant liar for the trials that run
            at once; with several metrics its multi-objective form), ``"gp"`` (Optuna's
            Gaussian-process sampler, for small continuous spaces; several metrics need
            Optuna >= 4.5) or ``"nsga2"`` (Optuna's NSGA-II, several metrics only: each
            generation is ``startup_trials`` trials, the first one random).
        rung_rule: Fit the model on the values at the highest rung that enough trials reached
            (BOHB's rule, see ``sweeplab.space._rung_sampler``); off: on each trial's last
            value, stopped trials ranked below finished ones by how far they got. With several
            metrics, or with NSGA-II, it is not applied (it models one metric's intermediate
            values).
        group: TPE only: model the branches of conditional choices apart (Optuna's ``group``).
        startup_trials: Random trials before the model (NSGA-II: its population size, at least
            2); None: `startup_trials` of the sweep's trial count.
        min_points: Observations a rung needs to be modelled; None: the start-up trials, and
            at least one more than the space has parameters.
        good_fraction: TPE only: the share of the observations it models as good (at most 25
            trials); None: Optuna's own 10 %.
        rung_view: Under the rung rule, what the model sees of a trial that stopped below the
            chosen rung: ``"bohb"`` (default), nothing, as in BOHB, whose model of a rung knows
            only the trials observed at that rung; ``"pruned"``, a PRUNED (bad) observation.
        random_fraction: The probability, ``0 <= random_fraction < 1``, that a trial's config
            is drawn at random instead of from the model, as BOHB does. The draw is fixed by the
            seed and the trial's number; the trial is recorded as any other. None (default):
            BOHB's 1/3 with one metric; 0 with several metrics and with NSGA-II (their samplers
            were measured without it).
        rung_weighting: Under the rung rule, model every rung with enough observations instead
            of only the highest, as Hyper-Tune does: each rung is weighted by how well its
            ranking agrees with the highest rung's on the trials that reached both (Kendall's
            tau, clipped at 0; the highest rung weighs 1), and each trial is proposed from one
            rung's model, drawn with probability proportional to the weights. A rung whose
            ranking disagrees proposes nothing, so misleading early rungs fall back to the rule.
        aggregate: ``"rung"``: the rung rule's value at the chosen rung; ``"last"``: every
            ended trial is modelled as complete with its last value, ranked by that value alone
            (how far it got counts only through its value; equal values keep trial order). It
            replaces the rung, so it needs ``rung_rule`` and excludes ``rung_view="bohb"`` and
            ``rung_weighting``. ``rung_rule=False`` is the other ranking: stopped trials below
            finished ones, by how far they got.
        random_start: Trials that must end (finish or stop) before the model proposes any,
            ``random_start >= 0``. Until then the sweep is random search: every trial gets the
            config that ``searcher="random"`` with the same seed would give it, in the same
            order, so it is as quick to a first good config; then ``random_fraction`` of the
            trials stay random. None (default): `handover_trials` of the sweep (six per
            parameter and six more, at most a third of the trials) with one metric and a random
            share; 0 with several metrics, with NSGA-II and with ``random_fraction=0``. 0: the
            model proposes from the first trial (after its own ``startup_trials``), with
            ``random_fraction`` of the trials random.
    """

    sampler: str = "tpe"
    rung_rule: bool = True
    group: bool = True
    startup_trials: int | None = None
    min_points: int | None = None
    good_fraction: float | None = None
    rung_view: str = "bohb"
    random_fraction: float | None = None
    rung_weighting: bool = False
    aggregate: str = "rung"
    random_start: int | None = None

    def __post_init__(self) -> None:
        if self.sampler not in SAMPLERS:
            raise SpecError(
                f"OptunaSearcher.sampler must be one of {list(SAMPLERS)}, but got {self.sampler!r}."
            )
        for name in ("startup_trials", "min_points"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise SpecError(f"OptunaSearcher.{name} must be an integer or None, got {value!r}.")
            if value is not None and value < 1:
                raise SpecError(f"OptunaSearcher.{name} must be >= 1, but got {value!r}.")
        start = self.random_start
        if start is not None and (
            isinstance(start, bool) or not isinstance(start, int) or start < 0
        ):
            raise SpecError(
                f"OptunaSearcher.random_start must be an integer >= 0 or None, but got {start!r}."
            )
        if self.sampler == "nsga2" and self.startup_trials == 1:
            raise SpecError(
                "OptunaSearcher.startup_trials is NSGA-II's population size with "
                "sampler='nsga2', so it must be >= 2, but got startup_trials=1."
            )

        if self.good_fraction is not None and not (
            isinstance(self.good_fraction, (int, float)) and 0 < self.good_fraction < 1
        ):
            raise SpecError(
                "OptunaSearcher.good_fraction must be a number between 0 and 1, "
                f"got {self.good_fraction!r}."
            )
        self._check_levers()

    def _check_levers(self) -> None:
        for name, allowed in (("rung_view", VIEWS), ("aggregate", AGGREGATES)):
            if getattr(self, name) not in allowed:
                raise SpecError(
                    f"OptunaSearcher.{name} must be one of {list(allowed)}, "
                    f"but got {getattr(self, name)!r}."
                )
        fraction = self.random_fraction
        if fraction is not None and (
            isinstance(fraction, bool)
            or not (isinstance(fraction, (int, float)) and 0 <= fraction < 1)
        ):
            raise SpecError(
                f"OptunaSearcher.random_fraction must be a number with 0 <= random_fraction < 1, "
                f"but got {fraction!r}."
            )
        if not isinstance(self.rung_weighting, bool):
            raise SpecError(
                f"OptunaSearcher.rung_weighting must be True or False, "
                f"but got {self.rung_weighting!r}."
            )
        refinements = {
            "rung_view": self.rung_view != DEFAULT_VIEW,
            "rung_weighting": self.rung_weighting,
            "aggregate": self.aggregate != "rung",
        }
        for name, changed in refinements.items():
            if changed and not self.rung_rule:
                raise SpecError(
                    f"OptunaSearcher.{name} shapes the rung rule's view of the study, so it "
                    f"needs rung_rule=True, but got rung_rule=False and {name}="
                    f"{getattr(self, name)!r}."
                )
        if self.aggregate == "last":
            for name in ("rung_view", "rung_weighting"):
                if refinements[name]:
                    raise SpecError(
                        f"OptunaSearcher.aggregate='last' models no rung, so {name} must keep "
                        f"its default, but got {name}={getattr(self, name)!r}."
                    )

    def share_random(self, metrics: int) -> float:
        """The share of trials drawn at random in a sweep of that many metrics."""
        if self.random_fraction is not None:
            return float(self.random_fraction)
        return BOHB_RANDOM_FRACTION if metrics == 1 and self.sampler != "nsga2" else 0.0

    def start_random(self, *, metrics: int, num_trials: int, dimensions: int) -> int:
        """The trials that end before the model proposes any (``random_start``), in a sweep of
        that many metrics and trials over that many parameters."""
        if self.random_start is not None:
            return self.random_start
        return handover_trials(num_trials, dimensions) if self._hands_over(metrics) else 0

    def _hands_over(self, metrics: int) -> bool:
        """Whether ``random_start=None`` starts with random search, with that many metrics."""
        return metrics == 1 and self.share_random(metrics) > 0

    def multi_objective_rule(self) -> str | None:
        """The rule these settings break with several metrics, or None if they can run them.

        The rung rule and its levers model one metric's intermediate values, so with several
        metrics the levers must keep their defaults; ``rung_rule`` itself may stay True (the
        default: ``searcher="optuna"`` takes several metrics) and is then not applied.
        """
        levers = {
            "rung_view": self.rung_view != DEFAULT_VIEW,
            "rung_weighting": self.rung_weighting,
            "aggregate": self.aggregate != "rung",
            "min_points": self.min_points is not None,
        }
        changed = [f"{name}={getattr(self, name)!r}" for name, on in levers.items() if on]
        if changed:
            return (
                "must keep the rung rule's levers at their defaults with several metrics (they "
                f"model one metric's intermediate values): {', '.join(changed)}"
            )
        if self.sampler == "gp" and _optuna_version() < _GP_MULTI_OBJECTIVE:
            installed = importlib.metadata.version("optuna")
            return (
                "with sampler='gp' and several metrics needs Optuna >= 4.5 (its GPSampler's "
                f"constrained multi-objective form), but Optuna {installed} is installed"
            )
        return None

    def single_objective_rule(self) -> str | None:
        """The rule these settings break with one metric, or None if they can run it."""
        if self.sampler == "nsga2":
            return "with sampler='nsga2' needs several metrics (NSGA-II ranks Pareto fronts)"
        return None

    def __str__(self) -> str:
        return self.describe(metrics=1)

    def describe(self, *, metrics: int) -> str:
        """Its name with the settings that shape it, in a sweep of that many metrics."""
        rung = (
            self.rung_rule and self.aggregate == "rung" and self.sampler != "nsga2" and metrics == 1
        )
        rule = ", rung rule" if rung else ""
        levers = [
            f"{self.rung_view} view" if rung else "",
            "rung weighting" if self.rung_weighting and rung else "",
            "last value" if self.aggregate == "last" and metrics == 1 else "",
            self._describe_start(metrics),
            f"{100 * fraction:.3g}% random" if (fraction := self.share_random(metrics)) else "",
        ]
        return f"optuna ({', '.join([self.sampler + rule, *filter(None, levers)])})"

    def _describe_start(self, metrics: int) -> str:
        if self.random_start is None:
            return "random start" if self._hands_over(metrics) else ""
        return f"random start of {self.random_start}" if self.random_start else ""

    def build(
        self,
        space: Space,
        *,
        metric: str,
        mode: str,
        seed: int | None,
        num_trials: int,
        objectives: Sequence[Objective] = (),
        constraints: Sequence[Constraint] = (),
    ) -> Any:
        """Ray Tune's ``OptunaSearch`` over ``space`` with `make_sampler`'s sampler.

        ``objectives``: every metric when there are several (the first is ``metric`` and
        ``mode``); the search then takes their lists, and ``constraints`` (each bounds an
        objective) mark the trials that break them infeasible.

        Raises:
            SpecError: If these settings cannot run this many metrics
                (`multi_objective_rule`, `single_objective_rule`), or constraints come with
                one metric.
        """
        from ray.tune.search.optuna import OptunaSearch

        from sweeplab.space._optuna import compile_to_optuna

        several = len(objectives) > 1
        rule = self.multi_objective_rule() if several else self.single_objective_rule()
        if rule is None and constraints and not several:
            rule = "takes constraints only with several metrics"
        if rule is not None:
            raise SpecError(f"OptunaSearcher {rule}, but got {self!r}.")
        if not several:
            sampler = self.make_sampler(space, seed=seed, num_trials=num_trials)
            return OptunaSearch(
                space=compile_to_optuna(space), metric=metric, mode=mode, sampler=sampler
            )
        sampler = self.make_sampler(
            space, seed=seed, num_trials=num_trials, objectives=objectives, constraints=constraints
        )
        return OptunaSearch(
            space=compile_to_optuna(space),
            metric=[o.name for o in objectives],
            mode=[o.mode for o in objectives],
            sampler=sampler,
        )

    def make_sampler(
        self,
        space: Space,
        *,
        seed: int | None,
        num_trials: int,
        objectives: Sequence[Objective] = (),
        constraints: Sequence[Constraint] = (),
    ) -> Any:
        """The Optuna sampler for a sweep of ``num_trials`` trials over ``space``.

        With several ``objectives`` it models them together, without the rung rule, and learns
        each of ``constraints`` as an Optuna constraint of the told values (see
        `sweeplab.space._optuna_mo`).
        """
        import optuna

        startup = self.startup_trials or startup_trials(num_trials)
        extra: dict[str, Any] = {}
        if constraints:
            from sweeplab.space._optuna_mo import ConstraintViolations

            names = tuple(o.name for o in objectives)
            extra["constraints_func"] = ConstraintViolations(names, tuple(constraints))
        with warnings.catch_warnings():
            # `group` and the GP sampler are marked experimental by Optuna, and TPE's `gamma`
            # deprecated since 4.9 (to be removed in 6.0; `good_fraction` is the only user);
            # `constraints_func` since 5.0 (to be removed in 7.0): its replacement,
            # `Trial.set_constraint`, needs the Optuna trial that Ray's `OptunaSearch` keeps
            # private, and does not exist before 5.0.
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            warnings.simplefilter("ignore", FutureWarning)
            base: Any
            if self.sampler == "gp":
                base = optuna.samplers.GPSampler(seed=seed, n_startup_trials=startup, **extra)
            elif self.sampler == "nsga2":
                base = optuna.samplers.NSGAIISampler(population_size=startup, seed=seed, **extra)
            else:
                gamma = None if self.good_fraction is None else _Gamma(self.good_fraction)
                base = optuna.samplers.TPESampler(
                    seed=seed,
                    n_startup_trials=startup,
                    multivariate=True,
                    group=self.group,
                    constant_liar=True,
                    gamma=gamma,
                    **extra,
                )
        sampler = base
        if constraints:
            from sweeplab.space._optuna_mo import ToldValuesSampler

            sampler = ToldValuesSampler(base)
        if self.rung_rule and len(objectives) <= 1 and self.sampler != "nsga2":
            from sweeplab.space._rung_sampler import RungSampler

            sampler = RungSampler(
                base,
                self.min_points or max(startup, space.dimensions + 1),
                view=self.rung_view,
                aggregate=self.aggregate,
                weighting=self.rung_weighting,
                seed=seed,
            )
        metrics = max(1, len(objectives))
        fraction = self.share_random(metrics)
        start = self.start_random(
            metrics=metrics, num_trials=num_trials, dimensions=space.dimensions
        )
        if start:
            from sweeplab.space._random_handover import RandomHandoverSampler

            sampler = RandomHandoverSampler(sampler, space, fraction, start=start, seed=seed)
        elif fraction:
            from sweeplab.space._random_interleave import RandomInterleavedSampler

            sampler = RandomInterleavedSampler(sampler, fraction, seed=seed)
        return sampler


_GP_MULTI_OBJECTIVE = (4, 5)


def _optuna_version() -> tuple[int, int]:
    match = re.match(r"(\d+)\.(\d+)", importlib.metadata.version("optuna"))
    return (int(match[1]), int(match[2])) if match else (0, 0)


@dataclasses.dataclass(frozen=True)
class _Gamma:
    """TPE's ``gamma``: how many of ``n`` observations are good (a class: Tune pickles it)."""

    fraction: float

    def __call__(self, n: int) -> int:
        return min(math.ceil(self.fraction * n), 25)
