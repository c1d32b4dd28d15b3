"""Random search first, then the model: BOHB's interleaving after a random start.

A model fitted on a sweep's first trials models its first rungs, and on real learning curves
those rank configs badly (see `sweeplab.space._rung_sampler`); meanwhile random search finds a
good config soonest, because it tries the most configs. :class:`RandomHandoverSampler` is random
search until ``start`` trials have ended, then hands over to the model, keeping ``fraction`` of
the proposals random as BOHB does.

Its random proposals are those of ``searcher="random"``: sweeplab's own sampler
(:meth:`Space.sample_one`) on one stream seeded with the sweep's seed. Until the handover a sweep
therefore proposes the configs that random search with the same seed would, in the same order,
and is as fast as it to a first good config.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState

from sweeplab.space._optuna import encode_for_optuna
from sweeplab.space._space import Space
from sweeplab.space._trial_draws import RANDOM_PATH, seed_entropy, trial_draw
from sweeplab.space._wrapped_sampler import WrappedSampler

__all__ = ["RandomHandoverSampler"]

_ENDED = (TrialState.COMPLETE, TrialState.PRUNED)


class RandomHandoverSampler(WrappedSampler):
    """Random search over ``space`` until ``start`` trials have ended, then mostly ``base``.

    Whether a trial is random is decided once, when it is first asked about: always while
    fewer than ``start`` trials of the study have ended (finished or stopped), then with
    probability ``fraction``, by a draw fixed by the seed and the trial's number. The draw is
    the one `RandomInterleavedSampler` makes, so after the handover the same trials are random
    as there. A random trial takes the next config of the random stream (see the module's
    docstring). ``base`` is still told every trial, and its model sees the random trials as any
    other.

    Args:
        base: The model's sampler.
        space: The space that the study's params encode (`compile_to_optuna`).
        fraction: The share of random trials after the handover, ``0 <= fraction < 1``.
        start: Trials that must end before the model proposes any, ``start >= 0``.
        seed: Seeds the choices and the random stream; None: not reproducible.
    """

    def __init__(
        self,
        base: BaseSampler,
        space: Space,
        fraction: float,
        *,
        start: int,
        seed: int | None = None,
    ) -> None:
        if isinstance(fraction, bool) or not 0 <= fraction < 1:
            raise ValueError(f"`0 <= fraction < 1` must hold, but got {fraction=}.")
        if isinstance(start, bool) or not isinstance(start, int) or start < 0:
            raise ValueError(f"`start` must be an integer >= 0, but got {start=!r}.")
        super().__init__(base)
        self.space = space
        self.fraction = fraction
        self.start = start
        self._entropy = seed_entropy(seed)
        # `searcher="random"`'s stream (`RandomSpaceSearcher`): one `sample_one` per config.
        self._stream = random.Random(seed)
        # Per trial not yet ended: its random config's Optuna params, or None where the model
        # proposes it. Every call about a trial asks again (once per parameter), and the answer
        # must not change when another trial ends in between.
        self._decided: dict[int, dict[str, Any] | None] = {}

    def share(self, ended: int) -> float:
        """The probability that a trial is random once ``ended`` trials have ended."""
        return 1.0 if ended < self.start else self.fraction

    def is_random(self, study: optuna.Study, number: int) -> bool:
        """Whether trial ``number`` of ``study`` is proposed at random."""
        return self._random_params(study, number) is not None

    def _random_params(self, study: optuna.Study, number: int) -> dict[str, Any] | None:
        if number not in self._decided:
            ended = len(study.get_trials(deepcopy=False, states=_ENDED))
            params = None
            if trial_draw(self._entropy, RANDOM_PATH, number) < self.share(ended):
                params = encode_for_optuna(self.space, self.space.sample_one(self._stream))
            self._decided[number] = params
        return self._decided[number]

    def infer_relative_search_space(
        self, study: optuna.Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        if self.is_random(study, trial.number):
            return {}
        return self.base.infer_relative_search_space(study, trial)

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        if self.is_random(study, trial.number):
            return {}
        return self.base.sample_relative(study, trial, search_space)

    def sample_independent(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        params = self._random_params(study, trial.number)
        if params is None:
            return self.base.sample_independent(study, trial, param_name, param_distribution)
        return params[param_name]

    def after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        self._decided.pop(trial.number, None)
        super().after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        super().reseed_rng()
        self._entropy = seed_entropy(None)
        self._stream = random.Random()
