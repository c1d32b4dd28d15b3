"""While ``Tuner.fit`` runs: the trainable registry cached, the trials' dataframes not read."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from sweeplab.raycompat._ledger import PrivateUse

__all__ = [
    "USES",
    "trainable_registry_cached",
    "trial_dataframes_not_read",
]

USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        "ray.tune.registry",
        "_global_registry",
        None,
        "Tune's registry of trainables, whose lookups a sweep caches while it runs: Tune reads "
        "a trial's class from the GCS several times per trial, and has no setting to keep it",
        purpose="speed",
        feature="the trainable registry cached while `fit` runs",
    ),
    PrivateUse(
        "ray.tune.registry",
        "_Registry.get",
        ("category", "key"),
        "the lookup of a registered value, answered from the cache for trainable classes",
        purpose="speed",
        feature="the trainable registry cached while `fit` runs",
    ),
    PrivateUse(
        "ray.tune.registry",
        "_Registry.contains",
        ("category", "key"),
        "whether a value is registered, answered from the cache for trainable classes",
        purpose="speed",
        feature="the trainable registry cached while `fit` runs",
    ),
    PrivateUse(
        "ray.tune.analysis.experiment_analysis",
        "ExperimentAnalysis._fetch_trial_dataframes",
        (),
        "read at the end of `fit`: every trial's result.json into a pandas DataFrame, for "
        "`Result.metrics_dataframe`; a sweep run by sweeplab reads no such frame, and no "
        "argument of `Tuner`, `TuneConfig` or `RunConfig` turns the read off",
        purpose="speed",
        feature="trial dataframes not read at the end of `fit`",
    ),
)


# --- The trainable registry ------------------------------------------------------------------


@contextlib.contextmanager
def trainable_registry_cached() -> Iterator[None]:
    """While a sweep runs: Tune's registry answers for trainable classes from a cache.

    Tune looks a trial's trainable class up in its registry several times per trial (when it
    creates the trial, its resources and its actor), and each lookup is a round trip to the
    GCS's key-value store and, for the class, an unpickling. A sweep registers its trainable once,
    before ``fit``, so the answers do not change while it runs: each name is read once. On these
    2 cores that was about 7 ms of driver time per trial. Other registry categories are read as
    before.
    """
    from ray.tune import registry

    store = registry._global_registry
    classes: dict[str, Any] = {}
    get, contains = store.get, store.contains

    def cached_get(category: str, key: str) -> Any:
        if category != registry.TRAINABLE_CLASS:
            return get(category, key)
        if key not in classes:
            classes[key] = get(category, key)
        return classes[key]

    def cached_contains(category: str, key: str) -> bool:
        if category == registry.TRAINABLE_CLASS and key in classes:
            return True
        return bool(contains(category, key))

    store.get, store.contains = cached_get, cached_contains
    try:
        yield
    finally:
        # The instance attributes shadowed the class's methods; removing them restores those.
        del store.get, store.contains


# --- The results of fit ---------------------------------------------------------------------


@contextlib.contextmanager
def trial_dataframes_not_read() -> Iterator[None]:
    """While a sweep runs: the results ``Tuner.fit`` returns carry no ``metrics_dataframe``.

    At its end ``fit`` reads every trial's ``result.json`` into a pandas DataFrame, one trial
    after the other, and keeps them all in its ``ResultGrid``. A sweep reads its trials' results
    from MLflow or from those files itself, so the frames were only time and memory: at the end
    of a sweep of 3,000 short trials they were the driver's peak memory. Inside this context the
    frames are not read (``Result.metrics_dataframe`` is None); the rest of each ``Result`` (its
    last metrics, config, path, error and checkpoints) is as before.
    """
    from ray.tune.analysis.experiment_analysis import ExperimentAnalysis

    read = ExperimentAnalysis._fetch_trial_dataframes

    def not_read(self: Any) -> dict[str, Any]:
        return {}

    ExperimentAnalysis._fetch_trial_dataframes = not_read
    try:
        yield
    finally:
        ExperimentAnalysis._fetch_trial_dataframes = read
