"""The searcher of a warm start: given configs first, then the sweep's own searcher.

A warm trial's outcome is handed to the inner searcher as history where it keeps one, in the
same states as any other trial's (see :mod:`sweeplab.strategies._searcher_feedback`).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from typing import Any

from ray.tune.search import Searcher

from sweeplab.pareto import Objective
from sweeplab.raycompat import hyperopt_trials, optuna_study
from sweeplab.space import Space
from sweeplab.strategies import (
    OutcomeLog,
    PickledState,
    TrialFeedbackSearcher,
    TrialOutcome,
    hyperopt_loss,
)

__all__ = ["WarmStartSearcher"]

logger = logging.getLogger(__name__)


class WarmStartSearcher(PickledState, Searcher):
    """Suggests `configs` (final nested shape) first, then delegates to `inner`.

    When a warm trial ends, its outcome is added to `inner`'s history where it keeps one: an
    `OptunaSearch` or `HyperOptSearch` built from `space` (possibly inside a
    `TrialFeedbackSearcher`). Ray's `add_evaluated_point` refuses Optuna's define-by-run spaces
    and HyperOpt lacks it, so the trial is added to the Optuna study or the HyperOpt trials
    directly, in the state any trial gets: a finished one COMPLETE (HyperOpt: its loss), a
    stopped one PRUNED with its intermediate values (HyperOpt: the stopped-trial loss code), a
    diverged one FAIL (HyperOpt: nothing). An errored warm trial teaches nothing. Other
    searchers get nothing (sweeplab's random sampler has no history; a configured searcher's
    encoding is unknown here).
    """

    def __init__(
        self,
        inner: Searcher,
        configs: list[dict[str, Any]],
        *,
        metric: str,
        mode: str,
        space: Space | None = None,
        max_iterations: int | None = None,
        objectives: Sequence[Objective] = (),
    ):
        super().__init__(metric=metric, mode=mode)
        self.inner = inner
        self.space = space
        self.max_iterations = max_iterations
        self.objectives = tuple(objectives) if len(objectives) > 1 else ()
        self.log = OutcomeLog(metric, max_iterations, objectives=[o.name for o in self.objectives])
        self.pending = [copy.deepcopy(dict(config)) for config in configs]
        self.warm: dict[str, dict[str, Any]] = {}

    def set_search_properties(
        self, metric: str | None, mode: str | None, config: dict, **spec: Any
    ) -> bool:
        return bool(self.inner.set_search_properties(metric, mode, config, **spec))

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        if self.pending:
            config = self.pending.pop(0)
            self.warm[trial_id] = config
            return copy.deepcopy(config)
        return self.inner.suggest(trial_id)

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        if trial_id not in self.warm:
            self.inner.on_trial_result(trial_id, result)
        else:
            self.log.record(trial_id, result)

    def on_trial_complete(
        self, trial_id: str, result: dict | None = None, error: bool = False
    ) -> None:
        if trial_id not in self.warm:
            self.inner.on_trial_complete(trial_id, result=result, error=error)
            return
        config = self.warm.pop(trial_id)
        outcome = self.log.outcome(trial_id, result, error)
        if self.space is None or outcome.kind == "errored":
            return
        try:
            _add_to_history(self, config, outcome)
        except Exception:  # history is a hint to the searcher: never fail the sweep for it
            logger.warning("Could not add warm trial %s to the searcher's history.", trial_id)
            logger.debug("Details:", exc_info=True)


def _add_to_history(warm: WarmStartSearcher, config: dict[str, Any], outcome: TrialOutcome) -> None:
    from ray.tune.search.hyperopt import HyperOptSearch
    from ray.tune.search.optuna import OptunaSearch

    inner = warm.inner
    if isinstance(inner, TrialFeedbackSearcher):
        inner = inner.inner
    assert warm.space is not None
    if isinstance(inner, OptunaSearch):
        _add_to_optuna(inner, warm.space, config, outcome, warm.objectives)
    elif isinstance(inner, HyperOptSearch):
        loss = hyperopt_loss(outcome, mode=str(warm.mode), max_iterations=warm.max_iterations)
        if loss is not None:
            _add_to_hyperopt(inner, warm.space, config, loss)


def _add_to_optuna(
    inner: Any,
    space: Space,
    config: dict[str, Any],
    outcome: TrialOutcome,
    objectives: Sequence[Objective] = (),
) -> None:
    """Adds a warm trial to the Optuna study. With several objectives, as the trial feedback
    tells any trial (see `sweeplab.strategies._searcher_feedback`): its last point COMPLETE
    (a stopped trial too), no point PRUNED, a diverged one FAIL."""
    import optuna

    from sweeplab.space import compile_to_optuna, encode_for_optuna

    # Replaying the define-by-run function on a FixedTrial yields Optuna's distributions.
    fixed = optuna.trial.FixedTrial(encode_for_optuna(space, config))
    compile_to_optuna(space)(fixed)
    states = {
        "finished": optuna.trial.TrialState.COMPLETE,
        "stopped": optuna.trial.TrialState.PRUNED,
        "diverged": optuna.trial.TrialState.FAIL,
    }
    state = states[outcome.kind]
    if objectives:
        if state != optuna.trial.TrialState.FAIL:
            state = optuna.trial.TrialState.PRUNED
            if outcome.point is not None:
                state = optuna.trial.TrialState.COMPLETE
        values = None
        if state == optuna.trial.TrialState.COMPLETE and outcome.point is not None:
            values = [float(outcome.point[o.name]) for o in objectives]
        trial = optuna.trial.create_trial(
            state=state, params=fixed.params, distributions=fixed.distributions, values=values
        )
        optuna_study(inner).add_trial(trial)
        return
    if state == optuna.trial.TrialState.COMPLETE and outcome.last_value is None:
        return  # a finished trial that reported no value teaches nothing
    trial = optuna.trial.create_trial(
        state=state,
        params=fixed.params,
        distributions=fixed.distributions,
        # A pruned trial's value is its last intermediate one, as `study.tell` records it.
        value=None if state == optuna.trial.TrialState.FAIL else outcome.last_value,
        intermediate_values=dict(outcome.values),
    )
    optuna_study(inner).add_trial(trial)


def _add_to_hyperopt(inner: Any, space: Space, config: dict[str, Any], loss: float) -> None:
    import hyperopt

    from sweeplab.space import encode_for_hyperopt

    trials, domain = hyperopt_trials(inner), inner.domain
    vals = encode_for_hyperopt(space, config)
    (tid,) = trials.new_trial_ids(1)
    # Every label of the space must appear; those of branches not chosen are empty (TPE reads
    # all of them), as in HyperOpt's own trials.
    misc = {
        "tid": tid,
        "cmd": domain.cmd,
        "workdir": domain.workdir,
        "idxs": {label: [tid] if label in vals else [] for label in domain.params},
        "vals": {label: [vals[label]] if label in vals else [] for label in domain.params},
    }
    (doc,) = trials.new_trial_docs(
        [tid], [None], [{"status": hyperopt.STATUS_OK, "loss": loss}], [misc]
    )
    doc["state"] = hyperopt.JOB_STATE_DONE
    doc["book_time"] = doc["refresh_time"] = hyperopt.utils.coarse_utcnow()
    trials.insert_trial_docs([doc])
    trials.refresh()
