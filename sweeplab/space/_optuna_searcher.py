"""Optuna searchers for early-stopped sweeps: TPE or GP, with BOHB's rung rule.

:class:`OptunaSearcher` is the user-facing recipe: ``Sweep(searcher=OptunaSearcher(...))``, compiled
against the sweep's own space, metric, mode, seed and trial count. ``searcher="optuna"`` is
``OptunaSearcher()``. The defaults are what ``python -m benchmarks.search`` measured best
(docs/search.md). The levers for curves whose early iterations mislead (``rung_view``,
``random_fraction``, ``rung_weighting``, ``aggregate``) are off by default, each keeping the
behaviour it refines, until the benchmark decides.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import TYPE_CHECKING, Any

from sweeplab.errors import SpecError

if TYPE_CHECKING:
    from sweeplab.space._space import Space

__all__ = ["AGGREGATES", "SAMPLERS", "VIEWS", "OptunaSearcher", "startup_trials"]

SAMPLERS = ("tpe", "gp")
VIEWS = ("pruned", "bohb")
AGGREGATES = ("rung", "last")


def startup_trials(num_trials: int) -> int:
    """Random trials before the model takes over: a tenth of the sweep, between 4 and 10.

    Optuna's fixed 10 is a sixth of a 60-trial ASHA sweep and all of a 10-trial one.
    """
    return max(4, min(10, num_trials // 10))


@dataclasses.dataclass(frozen=True)
class OptunaSearcher:
    """An Optuna searcher compiled against the sweep: ``Sweep(searcher=OptunaSearcher(...))``.

    ``searcher="optuna"`` is ``OptunaSearcher()``.

    Attributes:
        sampler: ``"tpe"`` (Optuna's TPE: multivariate, constant liar for the trials that run
            at once) or ``"gp"`` (Optuna's Gaussian-process sampler, for small continuous
            spaces).
        rung_rule: Fit the model on the values at the highest rung that enough trials reached
            (BOHB's rule, see ``sweeplab.space._rung_sampler``); off: on each trial's last
            value, stopped trials ranked below finished ones by how far they got.
        group: TPE only: model the branches of conditional choices apart (Optuna's ``group``).
        startup_trials: Random trials before the model; None: `startup_trials` of the sweep's
            trial count.
        min_points: Observations a rung needs to be modelled; None: the start-up trials, and
            at least one more than the space has parameters.
        good_fraction: TPE only: the share of the observations it models as good (at most 25
            trials); None: Optuna's own 10 %.
        rung_view: Under the rung rule, what the model sees of a trial that stopped below the
            chosen rung: ``"pruned"``, a PRUNED (bad) observation; ``"bohb"``, nothing, as in
            BOHB, whose model of a rung knows only the trials observed at that rung.
        random_fraction: The probability, ``0 <= random_fraction < 1``, that a trial's config
            is drawn at random instead of from the model, as BOHB does (it uses 1/3). The draw
            is fixed by the seed and the trial's number; the trial is recorded as any other.
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
    """

    sampler: str = "tpe"
    rung_rule: bool = True
    group: bool = True
    startup_trials: int | None = None
    min_points: int | None = None
    good_fraction: float | None = None
    rung_view: str = "pruned"
    random_fraction: float = 0.0
    rung_weighting: bool = False
    aggregate: str = "rung"

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
        if isinstance(fraction, bool) or not (
            isinstance(fraction, (int, float)) and 0 <= fraction < 1
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
            "rung_view": self.rung_view != "pruned",
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

    def __str__(self) -> str:
        rule = ", rung rule" if self.rung_rule and self.aggregate == "rung" else ""
        levers = [
            "bohb view" if self.rung_view != "pruned" else "",
            "rung weighting" if self.rung_weighting else "",
            "last value" if self.aggregate == "last" else "",
            f"{100 * self.random_fraction:.3g}% random" if self.random_fraction else "",
        ]
        return f"optuna ({', '.join([self.sampler + rule, *filter(None, levers)])})"

    def build(
        self, space: Space, *, metric: str, mode: str, seed: int | None, num_trials: int
    ) -> Any:
        """Ray Tune's ``OptunaSearch`` over ``space`` with `make_sampler`'s sampler."""
        from ray.tune.search.optuna import OptunaSearch

        from sweeplab.space._optuna import compile_to_optuna

        sampler = self.make_sampler(space, seed=seed, num_trials=num_trials)
        return OptunaSearch(
            space=compile_to_optuna(space), metric=metric, mode=mode, sampler=sampler
        )

    def make_sampler(self, space: Space, *, seed: int | None, num_trials: int) -> Any:
        """The Optuna sampler for a sweep of ``num_trials`` trials over ``space``."""
        import optuna

        startup = self.startup_trials or startup_trials(num_trials)
        with warnings.catch_warnings():
            # `group` and the GP sampler are marked experimental by Optuna, and TPE's `gamma`
            # deprecated since 4.9 (to be removed in 6.0; `good_fraction` is the only user).
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            warnings.simplefilter("ignore", FutureWarning)
            base: Any
            if self.sampler == "gp":
                base = optuna.samplers.GPSampler(seed=seed, n_startup_trials=startup)
            else:
                gamma = None if self.good_fraction is None else _Gamma(self.good_fraction)
                base = optuna.samplers.TPESampler(
                    seed=seed,
                    n_startup_trials=startup,
                    multivariate=True,
                    group=self.group,
                    constant_liar=True,
                    gamma=gamma,
                )
        sampler = base
        if self.rung_rule:
            from sweeplab.space._rung_sampler import RungSampler

            sampler = RungSampler(
                base,
                self.min_points or max(startup, space.dimensions + 1),
                view=self.rung_view,
                aggregate=self.aggregate,
                weighting=self.rung_weighting,
                seed=seed,
            )
        if self.random_fraction:
            from sweeplab.space._random_interleave import RandomInterleavedSampler

            sampler = RandomInterleavedSampler(sampler, self.random_fraction, seed=seed)
        return sampler


@dataclasses.dataclass(frozen=True)
class _Gamma:
    """TPE's ``gamma``: how many of ``n`` observations are good (a class: Tune pickles it)."""

    fraction: float

    def __call__(self, n: int) -> int:
        return min(math.ceil(self.fraction * n), 25)
