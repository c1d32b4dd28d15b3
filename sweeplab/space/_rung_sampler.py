"""BOHB's rung rule for any Optuna sampler: model the highest rung that enough trials reached.

Under ASHA most trials stop at their first rung. sweeplab tells the study such a trial as PRUNED
with its intermediate values, so plain TPE ranks it below every finished trial by how far it got.
BOHB (Falkner et al., 2018) instead compares trials *at one budget*: the model is fitted on the
values at the highest budget with enough observations. :class:`RungSampler` does that over any
Optuna sampler (TPE, GP): in the view of the study it hands to its base sampler, a trial that
reported the chosen step is COMPLETE with its value there, and a trial that ended below it is
PRUNED (a bad observation, which TPE ranks below every complete one and GP leaves out).
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState, create_trial

__all__ = ["RungSampler"]


class RungSampler(BaseSampler):
    """Fits ``base`` on the values at the highest step that ``min_points`` trials reported.

    Before any step has ``min_points`` observations, ``base`` sees the study itself. Running and
    failed trials are in the view as they are (TPE's constant liar still sees running ones).

    Args:
        base: The sampler to fit (``TPESampler`` or ``GPSampler``).
        min_points: Ended trials that must have reported a step before it is modelled.
    """

    def __init__(self, base: BaseSampler, min_points: int) -> None:
        if min_points < 1:
            raise ValueError(f"min_points must be >= 1, but got {min_points}.")
        self.base = base
        self.min_points = min_points
        self._cache: tuple[tuple[int, int], optuna.Study] | None = None

    def infer_relative_search_space(
        self, study: optuna.Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return self.base.infer_relative_search_space(*self._view(study, trial))

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        return self.base.sample_relative(*self._view(study, trial), search_space)

    def sample_independent(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        view, shadow = self._view(study, trial)
        return self.base.sample_independent(view, shadow, param_name, param_distribution)

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

    def rung(self, trials: Sequence[FrozenTrial]) -> int | None:
        """The highest step that at least ``min_points`` ended trials reported, or None."""
        counts: Counter[int] = Counter()
        for t in trials:
            if t.state in (TrialState.COMPLETE, TrialState.PRUNED):
                counts.update(t.intermediate_values.keys())
        enough = [step for step, n in counts.items() if n >= self.min_points]
        return max(enough) if enough else None

    def _view(self, study: optuna.Study, trial: FrozenTrial) -> tuple[optuna.Study, FrozenTrial]:
        trials = study.get_trials(deepcopy=False)
        key = (len(trials), sum(t.state.is_finished() for t in trials))
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, self._build(study, trials))
        view = self._cache[1]
        if view is study:
            return study, trial
        # The view holds every trial of the study in the same order, so under the same number;
        # the base sampler is given the view's own copy of the trial, so that what it writes
        # through the trial (its system attributes) lands in the view's storage.
        return view, view.get_trials(deepcopy=False)[trial.number]

    def _build(self, study: optuna.Study, trials: Sequence[FrozenTrial]) -> optuna.Study:
        step = self.rung(trials)
        if step is None:
            return study
        view = optuna.create_study(directions=study.directions, sampler=self.base)
        for t in trials:
            state, value = t.state, None
            steps = dict(t.intermediate_values)
            if t.state in (TrialState.COMPLETE, TrialState.PRUNED):
                if step in steps:
                    state, value = TrialState.COMPLETE, steps[step]
                    steps = {s: v for s, v in steps.items() if s <= step}
                else:
                    # Ended below the rung (stopped, or its function returned early).
                    state = TrialState.PRUNED
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                view.add_trial(
                    create_trial(
                        state=state,
                        value=value,
                        params=t.params,
                        distributions=t.distributions,
                        intermediate_values=steps,
                        system_attrs=t.system_attrs,
                    )
                )
        return view

    def __getstate__(self) -> dict[str, Any]:
        # The view is rebuilt from the study; Tune pickles the searcher with its sampler.
        return {**self.__dict__, "_cache": None}
