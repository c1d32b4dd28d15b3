"""Warm start: given configs are suggested first, then the sweep's own searcher takes over."""

from __future__ import annotations

import copy
from typing import Any

import ray.cloudpickle as pickle
from ray.tune.search import Searcher

__all__ = ["WarmStartSearcher"]


class WarmStartSearcher(Searcher):
    """Suggests `configs` (final nested shape) first, then delegates to `inner`.

    The warm trials' results are not fed to `inner`: its suggestions are in its own encoding
    (Optuna's or HyperOpt's), and it has no record of trials it did not suggest.
    """

    def __init__(self, inner: Searcher, configs: list[dict[str, Any]], *, metric: str, mode: str):
        super().__init__(metric=metric, mode=mode)
        self.inner = inner
        self.pending = [copy.deepcopy(dict(config)) for config in configs]
        self.warm_ids: set[str] = set()

    def set_search_properties(
        self, metric: str | None, mode: str | None, config: dict, **spec: Any
    ) -> bool:
        return bool(self.inner.set_search_properties(metric, mode, config, **spec))

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        if self.pending:
            self.warm_ids.add(trial_id)
            return self.pending.pop(0)
        return self.inner.suggest(trial_id)

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        if trial_id not in self.warm_ids:
            self.inner.on_trial_result(trial_id, result)

    def on_trial_complete(
        self, trial_id: str, result: dict | None = None, error: bool = False
    ) -> None:
        if trial_id not in self.warm_ids:
            self.inner.on_trial_complete(trial_id, result=result, error=error)

    def save(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "wb") as file:
            pickle.dump(self.__dict__, file)

    def restore(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "rb") as file:
            self.__dict__.update(pickle.load(file))
