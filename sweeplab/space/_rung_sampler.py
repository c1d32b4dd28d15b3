"""BOHB's rung rule for any Optuna sampler: model the highest rung that enough trials reached.

Under ASHA most trials stop at their first rung. sweeplab tells the study such a trial as PRUNED
with its intermediate values, so plain TPE ranks it below every finished trial by how far it got.
BOHB (Falkner et al., 2018) instead compares trials *at one budget*: the model is fitted on the
values at the highest budget with enough observations. :class:`RungSampler` does that over any
Optuna sampler (TPE, GP): in the view of the study it hands to its base sampler, a trial that
reported the chosen step is COMPLETE with its value there. A trial that ended below it is, by
``view``:

- ``"pruned"``: PRUNED, a bad observation, which TPE ranks below every complete one (GP leaves
  it out). The early-ranking bias comes back through these: a trial stopped at rung 1 counts
  against its region, however misleading rung 1 is.
- ``"bohb"``: left out, as BOHB does: the model of a rung knows only the trials observed there.

Two refinements, each an option:

- ``weighting`` (Hyper-Tune, Li et al. 2022): every rung with enough observations is a model,
  weighted by how well its ranking agrees with the highest rung's (:func:`rank_agreement`), and
  each trial is proposed from one rung's view, drawn with probability proportional to the
  weights. TPE takes no weights per observation, so the rungs are mixed per proposal: in
  expectation a rung proposes its weight's share of the trials, a rung whose ranking disagrees
  with the top proposes none, and when only the top agrees the rule is BOHB's again.
- ``aggregate="last"``: no rung is chosen; every ended trial is COMPLETE with its last value,
  as Ray's Optuna searcher tells Optuna (see :class:`RungSampler`).

"Left out" means FAIL in the view (Optuna's samplers model no FAIL trial): the view keeps every
trial of the study under its own number, which the base sampler relies on.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState, create_trial

from sweeplab.space._optuna_searcher import AGGREGATES, VIEWS
from sweeplab.space._trial_draws import RUNG_CHOICE, seed_entropy, trial_draw
from sweeplab.space._wrapped_sampler import WrappedSampler

__all__ = ["RungSampler", "rank_agreement"]

_ENDED = (TrialState.COMPLETE, TrialState.PRUNED)
_LAST = "last"  # the view's key under `aggregate="last"`


def rank_agreement(pairs: Sequence[tuple[float, float]]) -> float:
    """Kendall's tau-b of the pairs' two rankings, clipped at 0; 0 when it is undefined.

    1: the two rankings agree on every pair of trials; 0: no better than chance, or worse.
    """
    if len(pairs) < 2:
        return 0.0
    from scipy.stats import kendalltau

    low, high = zip(*pairs, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant ranking: tau is NaN, and scipy warns
        tau = float(kendalltau(low, high).statistic)
    return max(0.0, tau) if math.isfinite(tau) else 0.0


@dataclasses.dataclass
class _Views:
    """The rungs' weights of one state of the study (its trials and how many ended)."""

    key: tuple[int, int]
    weights: dict[int, float]


@dataclasses.dataclass
class _Scan:
    """What the sampler has read of its study's trials, kept up to date trial by trial.

    A finished trial never changes (Optuna's storages refuse to update it), so it is read once,
    when it is first seen finished; each call reads only the new trials and those still open.
    A suggestion then costs in proportion to the trials that changed, not to the whole study.

    Attributes:
        study: The study read (a sampler serves one study).
        read: Trials read so far: the study's numbers ``0 .. read - 1``.
        open: Those of them that were running or waiting when last read.
        finished: Those of them finished.
        pruned: Whether one of them ended PRUNED.
        step_counts: How many ended trials reported each step (as `_step_counts`).
    """

    study: optuna.Study
    read: int = 0
    open: list[int] = dataclasses.field(default_factory=list)
    finished: int = 0
    pruned: bool = False
    step_counts: Counter[int] = dataclasses.field(default_factory=Counter)

    def update(self, trials: Sequence[FrozenTrial]) -> None:
        """Reads the trials that are new or were open (``trials[n]`` is trial ``n``)."""
        still_open = []
        for number in _changed(self.open, self.read, len(trials)):
            t = trials[number]
            if not t.state.is_finished():
                still_open.append(number)
                continue
            self.finished += 1
            if t.state in _ENDED:
                self.step_counts.update(t.intermediate_values.keys())
            self.pruned = self.pruned or t.state == TrialState.PRUNED
        self.open = still_open
        self.read = len(trials)


@dataclasses.dataclass
class _View:
    """The view of the study at one target, kept in step with the study trial by trial.

    A view at a given rung is a function of the study's trials alone, so it is built once per
    target and then synced: a new trial is added, and a trial that was running when it was
    mirrored gets its new params and, once it ended, its steps, state and value. A running
    trial is mirrored with its params and no steps: the base sampler reads a running trial's
    params (TPE's constant liar), never its steps.

    Attributes:
        study: The view, on a storage of its own.
        storage: That storage (public API: ``set_trial_param``, ``set_trial_state_values``...).
        mirrored: Per trial number, the study's (state, params) when last synced.
        open: The numbers of the trials mirrored unfinished: a finished trial never changes,
            so only these (and new trials) are compared at the next sync.
    """

    study: optuna.Study
    storage: optuna.storages.BaseStorage
    mirrored: list[tuple[TrialState, int]] = dataclasses.field(default_factory=list)
    open: list[int] = dataclasses.field(default_factory=list)

    def trial_id(self, number: int) -> int:
        study_id = self.storage.get_study_id_from_name(self.study.study_name)
        return self.storage.get_trial_id_from_study_id_trial_number(study_id, number)


class RungSampler(WrappedSampler):
    """Fits ``base`` on the values at the highest step that ``min_points`` trials reported.

    Before any step has ``min_points`` observations, ``base`` sees the study itself. Running and
    failed trials are in the view as they are (TPE's constant liar still sees running ones).

    Under ``aggregate="last"``, ``base`` sees every ended trial as COMPLETE with its last value
    (a finished trial's told value, a stopped trial's last intermediate one; a stopped trial
    with no value is left out). Its rank is that value alone: how far a trial got counts only
    through its value (on a curve that improves with training, the trial that went further
    usually has the better one), and equal values keep the trials' order. Ranking by how far a
    trial got first is what the study itself says (PRUNED below COMPLETE), i.e.
    ``OptunaSearcher(rung_rule=False)``. ``min_points``, ``view`` and ``weighting`` are unused.

    Args:
        base: The sampler to fit (``TPESampler`` or ``GPSampler``).
        min_points: Ended trials that must have reported a step before it is modelled.
        view: What the view holds of a trial that ended below the rung: ``"pruned"``, PRUNED;
            ``"bohb"``, nothing (see the module's docstring).
        aggregate: ``"rung"``: a trial's value at the chosen rung; ``"last"``: its last value.
        weighting: Propose each trial from a rung drawn by :meth:`rung_weights` (the module's
            docstring says how); False: always from the highest rung with enough points.
        seed: Seeds the rung drawn for each trial; None: not reproducible.
    """

    def __init__(
        self,
        base: BaseSampler,
        min_points: int,
        *,
        view: str = "bohb",
        aggregate: str = "rung",
        weighting: bool = False,
        seed: int | None = None,
    ) -> None:
        if min_points < 1:
            raise ValueError(f"min_points must be >= 1, but got {min_points}.")
        if view not in VIEWS:
            raise ValueError(f"view must be one of {list(VIEWS)}, but got {view!r}.")
        if aggregate not in AGGREGATES:
            raise ValueError(f"aggregate must be one of {list(AGGREGATES)}, but got {aggregate!r}.")
        if aggregate == _LAST and (view != "bohb" or weighting):
            raise ValueError(
                f"aggregate='last' chooses no rung, so `view` and `weighting` must keep their "
                f"defaults, but got ({view=}, {weighting=})."
            )
        super().__init__(base)
        self.min_points = min_points
        self.view = view
        self.aggregate = aggregate
        self.weighting = weighting
        self._entropy = seed_entropy(seed)
        self._cache: _Views | None = None
        self._views: dict[int | str, _View] = {}
        self._scan: _Scan | None = None

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

    def reseed_rng(self) -> None:
        super().reseed_rng()
        self._entropy = seed_entropy(None)

    def rung(self, trials: Sequence[FrozenTrial]) -> int | None:
        """The highest step that at least ``min_points`` ended trials reported, or None."""
        return self._highest(_step_counts(trials))

    def _highest(self, counts: Counter[int]) -> int | None:
        enough = [step for step, n in counts.items() if n >= self.min_points]
        return max(enough) if enough else None

    def rung_weights(self, trials: Sequence[FrozenTrial]) -> dict[int, float]:
        """The rungs to propose from, each with its weight; empty before any rung has enough.

        Without ``weighting``: the highest rung with enough points, weight 1. With it, also
        every lower rung that ``min_points`` ended trials reported and at which some trial
        ended (a rung of the scheduler, not a step in between), weighted by
        :func:`rank_agreement` of its values with the highest rung's, over the trials that
        reported both. The highest rung agrees with itself: weight 1.
        """
        top = self.rung(trials)
        if top is None:
            return {}
        weights = {top: 1.0}
        if not self.weighting:
            return weights
        ended = [t for t in trials if t.state in _ENDED and t.intermediate_values]
        counts = _step_counts(ended)
        stops = {max(t.intermediate_values) for t in ended}
        at_top = [t.intermediate_values for t in ended if top in t.intermediate_values]
        for step in sorted(stops):
            if step < top and counts[step] >= self.min_points:
                pairs = [(v[step], v[top]) for v in at_top if step in v]
                weights[step] = rank_agreement(pairs)
        return dict(sorted(weights.items()))

    def rung_for(self, trials: Sequence[FrozenTrial], number: int) -> int | None:
        """The rung whose view proposes trial ``number``; None: the study itself.

        A draw fixed by the seed and ``number`` picks among :meth:`rung_weights`, with
        probability proportional to the weights.
        """
        return self.pick_rung(self.rung_weights(trials), number)

    def pick_rung(self, weights: dict[int, float], number: int) -> int | None:
        """The rung of ``weights`` drawn for trial ``number``; None when ``weights`` is empty."""
        if len(weights) <= 1:
            return next(iter(weights), None)
        threshold = trial_draw(self._entropy, RUNG_CHOICE, number) * sum(weights.values())
        total = 0.0
        for step, weight in weights.items():
            total += weight
            if threshold < total:
                return step
        return max(weights)  # rounding at the very top of the sum

    def _view(self, study: optuna.Study, trial: FrozenTrial) -> tuple[optuna.Study, FrozenTrial]:
        trials = study.get_trials(deepcopy=False)
        scan = self._read(study, trials)
        key = (len(trials), scan.finished)
        if self._cache is None or self._cache.key != key:
            weights: dict[int, float] = {}
            if self.weighting:
                weights = self.rung_weights(trials)
            elif self.aggregate != _LAST and (top := self._highest(scan.step_counts)) is not None:
                weights = {top: 1.0}  # rung_weights(trials) without weighting, from the scan
            self._cache = _Views(key, weights)
        target: int | str | None
        if self.aggregate == _LAST:
            target = _LAST if scan.pruned else None
        else:
            target = self.pick_rung(self._cache.weights, trial.number)
        if target is None:
            return study, trial
        view = self._views.get(target)
        if view is None:
            storage = optuna.storages.InMemoryStorage()
            view = _View(
                optuna.create_study(
                    storage=storage, directions=study.directions, sampler=self.base
                ),
                storage,
            )
            self._views[target] = view
        self._sync(view, trials, target)
        # The view holds every trial of the study in the same order, so under the same number;
        # the base sampler is given the view's own copy of the trial, so that what it writes
        # through the trial (its system attributes) lands in the view's storage.
        return view.study, view.study.get_trials(deepcopy=False)[trial.number]

    def _read(self, study: optuna.Study, trials: Sequence[FrozenTrial]) -> _Scan:
        """The scan of `study`, brought up to date with its `trials`."""
        scan = self._scan
        if scan is None or scan.study is not study:
            # Another study (a sampler serves one): read it afresh, and mirror it afresh.
            scan = self._scan = _Scan(study)
            self._cache = None
            self._views = {}
        scan.update(trials)
        return scan

    def _sync(self, view: _View, trials: Sequence[FrozenTrial], target: int | str) -> None:
        """Brings `view` in step with the study's `trials` (see `_View`).

        Only the new trials and those mirrored unfinished are compared, in number order.
        """
        still_open = []
        for number in _changed(view.open, len(view.mirrored), len(trials)):
            t = trials[number]
            if not t.state.is_finished():
                still_open.append(number)
            seen = (t.state, len(t.params))
            if number < len(view.mirrored):
                if view.mirrored[number] != seen:
                    self._update(view, t, target)
                    view.mirrored[number] = seen
                continue
            state, value, steps = self._observed(t, target)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                view.study.add_trial(
                    create_trial(
                        state=state,
                        value=value,
                        params=t.params,
                        distributions=t.distributions,
                        intermediate_values=steps,
                        system_attrs=t.system_attrs,
                    )
                )
            view.mirrored.append(seen)
        view.open = still_open

    def _update(self, view: _View, t: FrozenTrial, target: int | str) -> None:
        """Mirrors a trial that was running in `view`: its new params, then how it ended."""
        trial_id = view.trial_id(t.number)
        known = view.study.get_trials(deepcopy=False)[t.number].params
        for name, value in t.params.items():
            if name not in known:
                distribution = t.distributions[name]
                view.storage.set_trial_param(
                    trial_id, name, distribution.to_internal_repr(value), distribution
                )
        state, value, steps = self._observed(t, target)
        if state == TrialState.RUNNING:
            return
        for step, step_value in steps.items():
            view.storage.set_trial_intermediate_value(trial_id, step, step_value)
        view.storage.set_trial_state_values(trial_id, state, None if value is None else [value])

    def _observed(
        self, t: FrozenTrial, target: int | str
    ) -> tuple[TrialState, float | None, dict[int, float]]:
        """What the view at ``target`` says of trial ``t``: its state, value and steps."""
        steps = dict(t.intermediate_values)
        if t.state not in _ENDED:
            # A running trial's steps: none (the base sampler reads only its params).
            return t.state, None, {} if t.state == TrialState.RUNNING else steps
        if target == _LAST:
            if t.state == TrialState.COMPLETE:
                return t.state, t.value, steps
            if steps:
                return TrialState.COMPLETE, steps[max(steps)], steps
            return TrialState.FAIL, None, steps
        assert isinstance(target, int)
        if target in steps:
            return (
                TrialState.COMPLETE,
                steps[target],
                {s: v for s, v in steps.items() if s <= target},
            )
        # Ended below the rung (stopped, or its function returned early).
        return (TrialState.PRUNED if self.view == "pruned" else TrialState.FAIL), None, steps

    def __getstate__(self) -> dict[str, Any]:
        # The views and the scan are rebuilt from the study; Tune pickles the searcher with its
        # sampler.
        return {**self.__dict__, "_cache": None, "_views": {}, "_scan": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update({"_views": {}, "_scan": None, **state})


def _changed(open_numbers: list[int], read: int, total: int) -> Iterable[int]:
    """The trial numbers to read again: those open when last read, then the new ones."""
    return itertools.chain(open_numbers, range(read, total))


def _step_counts(trials: Sequence[FrozenTrial]) -> Counter[int]:
    """How many ended trials reported each step."""
    counts: Counter[int] = Counter()
    for t in trials:
        if t.state in _ENDED:
            counts.update(t.intermediate_values.keys())
    return counts
