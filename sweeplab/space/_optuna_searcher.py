"""Optuna searchers for early-stopped sweeps: TPE or GP, with BOHB's rung rule.

:class:`OptunaSearcher` is the user-facing recipe: ``Sweep(searcher=OptunaSearcher(...))``, compiled
against the sweep's own space, metric, mode, seed and trial count. ``searcher="optuna"`` is
``OptunaSearcher()``. The defaults are what ``python -m benchmarks.search`` measured best
(docs/search.md).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import TYPE_CHECKING, Any

from sweeplab.errors import SpecError

if TYPE_CHECKING:
    from sweeplab.space._space import Space

__all__ = ["SAMPLERS", "OptunaSearcher", "startup_trials"]

SAMPLERS = ("tpe", "gp")


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
    """

    sampler: str = "tpe"
    rung_rule: bool = True
    group: bool = True
    startup_trials: int | None = None
    min_points: int | None = None
    good_fraction: float | None = None

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

    def __str__(self) -> str:
        rule = ", rung rule" if self.rung_rule else ""
        return f"optuna ({self.sampler}{rule})"

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
        if not self.rung_rule:
            return base
        from sweeplab.space._rung_sampler import RungSampler

        return RungSampler(base, self.min_points or max(startup, space.dimensions + 1))


@dataclasses.dataclass(frozen=True)
class _Gamma:
    """TPE's ``gamma``: how many of ``n`` observations are good (a class: Tune pickles it)."""

    fraction: float

    def __call__(self, n: int) -> int:
        return min(math.ceil(self.fraction * n), 25)
