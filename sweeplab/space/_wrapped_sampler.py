"""The base of sweeplab's Optuna sampler wrappers: each wraps one sampler, its ``base``."""

from __future__ import annotations

from collections.abc import Sequence

import optuna
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState

__all__ = ["WrappedSampler"]


class WrappedSampler(BaseSampler):
    """Tells ``base`` of every trial's start and end, and reseeds it with the wrapper.

    A wrapper changes what ``base`` is asked (the study it sees, or whether it is asked at all);
    the trial's lifecycle always reaches ``base`` as it is.
    """

    def __init__(self, base: BaseSampler) -> None:
        self.base = base

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self.base.before_trial(study, trial)

    def after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        self.base.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self.base.reseed_rng()
