"""The searcher of a warm start: given configs first, then the sweep's own searcher.

A warm trial's result is handed to the inner searcher as history where it keeps one.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

import ray.cloudpickle as pickle
from ray.tune.search import Searcher

from sweeplab._numbers import is_finite_number
from sweeplab.engine._ray_compat import hyperopt_trials, optuna_study
from sweeplab.space import Space

__all__ = ["WarmStartSearcher"]

logger = logging.getLogger(__name__)


class WarmStartSearcher(Searcher):
    """Suggests `configs` (final nested shape) first, then delegates to `inner`.

    When a warm trial completes with a value of the metric, the value is added to `inner`'s
    history where it keeps one: an `OptunaSearch` or `HyperOptSearch` built from `space` (Ray's
    `add_evaluated_point` refuses Optuna's define-by-run spaces and HyperOpt lacks it, so the
    trial is added to the Optuna study or the HyperOpt trials directly). Other searchers get
    nothing (sweeplab's random sampler has no history; a configured searcher's encoding is
    unknown here).
    """

    def __init__(
        self,
        inner: Searcher,
        configs: list[dict[str, Any]],
        *,
        metric: str,
        mode: str,
        space: Space | None = None,
    ):
        super().__init__(metric=metric, mode=mode)
        self.inner = inner
        self.space = space
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

    def on_trial_complete(
        self, trial_id: str, result: dict | None = None, error: bool = False
    ) -> None:
        if trial_id not in self.warm:
            self.inner.on_trial_complete(trial_id, result=result, error=error)
            return
        config = self.warm.pop(trial_id)
        value = (result or {}).get(self.metric) if not error else None
        if self.space is None or not is_finite_number(value):
            return
        try:
            _add_to_history(self.inner, self.space, config, float(value))  # type: ignore[arg-type]
        except Exception:  # history is a hint to the searcher: never fail the sweep for it
            logger.warning("Could not add warm trial %s to the searcher's history.", trial_id)
            logger.debug("Details:", exc_info=True)

    def save(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "wb") as file:
            pickle.dump(self.__dict__, file)

    def restore(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "rb") as file:
            self.__dict__.update(pickle.load(file))


def _add_to_history(inner: Searcher, space: Space, config: dict[str, Any], value: float) -> None:
    from ray.tune.search.hyperopt import HyperOptSearch
    from ray.tune.search.optuna import OptunaSearch

    if isinstance(inner, OptunaSearch):
        _add_to_optuna(inner, space, config, value)
    elif isinstance(inner, HyperOptSearch):
        _add_to_hyperopt(inner, space, config, value)


def _add_to_optuna(inner: Any, space: Space, config: dict[str, Any], value: float) -> None:
    import optuna

    from sweeplab.space._optuna import compile_to_optuna, encode_for_optuna

    # Replaying the define-by-run function on a FixedTrial yields Optuna's distributions.
    fixed = optuna.trial.FixedTrial(encode_for_optuna(space, config))
    compile_to_optuna(space)(fixed)
    trial = optuna.trial.create_trial(
        params=fixed.params, distributions=fixed.distributions, value=value
    )
    optuna_study(inner).add_trial(trial)


def _add_to_hyperopt(inner: Any, space: Space, config: dict[str, Any], value: float) -> None:
    import hyperopt

    from sweeplab.space._hyperopt import encode_for_hyperopt

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
    loss = inner.metric_op * value  # HyperOpt minimises
    (doc,) = trials.new_trial_docs(
        [tid], [None], [{"status": hyperopt.STATUS_OK, "loss": loss}], [misc]
    )
    doc["state"] = hyperopt.JOB_STATE_DONE
    doc["book_time"] = doc["refresh_time"] = hyperopt.utils.coarse_utcnow()
    trials.insert_trial_docs([doc])
    trials.refresh()
