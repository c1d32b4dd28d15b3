"""Random proposals interleaved with a model's, as BOHB does (one trial in three there).

A model fitted on misleading early values keeps proposing near the configs that looked good
early. BOHB (Falkner et al., 2018) draws a third of its configs at random, whatever the model
says, so that the search keeps exploring and the model keeps getting observations it did not
choose. :class:`RandomInterleavedSampler` does that over any Optuna sampler: the trial is still
asked, suggested and told through the study as usual, only its parameters come from a
``RandomSampler``.
"""

from __future__ import annotations

from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler, RandomSampler
from optuna.trial import FrozenTrial

from sweeplab.space._trial_draws import (
    RANDOM_PATH,
    RANDOM_SAMPLER,
    derived_seed,
    seed_entropy,
    trial_draw,
)
from sweeplab.space._wrapped_sampler import WrappedSampler

__all__ = ["RandomInterleavedSampler"]


class RandomInterleavedSampler(WrappedSampler):
    """Proposes a ``fraction`` of the trials at random, and asks ``base`` for the others.

    Whether a trial is random is a draw fixed by the seed and the trial's number
    (:meth:`is_random`), so every call about one trial takes the same path and a rerun with the
    same seed makes the same choices. ``base`` is still told every trial (``before_trial``,
    ``after_trial``), and its model sees the random trials as any other.

    Args:
        base: The model's sampler.
        fraction: The probability that a trial is random, ``0 <= fraction < 1``.
        seed: Seeds the choices and the random proposals; None: not reproducible.
    """

    # The last trial's (number, draw): every call about a trial asks again, once per
    # parameter. A class default, so that a sampler pickled without it still loads.
    _last: tuple[int, float] | None = None

    def __init__(self, base: BaseSampler, fraction: float, *, seed: int | None = None) -> None:
        if isinstance(fraction, bool) or not 0 <= fraction < 1:
            raise ValueError(f"`0 <= fraction < 1` must hold, but got {fraction=}.")
        super().__init__(base)
        self.fraction = fraction
        self._entropy = seed_entropy(seed)
        self.random = RandomSampler(seed=derived_seed(self._entropy, RANDOM_SAMPLER))

    def is_random(self, number: int) -> bool:
        """Whether trial ``number`` is proposed at random."""
        if self._last is None or self._last[0] != number:
            self._last = (number, trial_draw(self._entropy, RANDOM_PATH, number))
        return self._last[1] < self.fraction

    def infer_relative_search_space(
        self, study: optuna.Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        if self.is_random(trial.number):
            return {}
        return self.base.infer_relative_search_space(study, trial)

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        if self.is_random(trial.number):
            return {}
        return self.base.sample_relative(study, trial, search_space)

    def sample_independent(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        sampler = self.random if self.is_random(trial.number) else self.base
        return sampler.sample_independent(study, trial, param_name, param_distribution)

    def reseed_rng(self) -> None:
        super().reseed_rng()
        self.random.reseed_rng()
        self._entropy = seed_entropy(None)
        self._last = None
