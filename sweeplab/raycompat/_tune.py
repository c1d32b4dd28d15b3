"""Ray Tune internals: the trainable class, scheduler state, the actor cache, trial checkpoints.

Also the key Tune adds to a repeated result, spelled out so the tracker needs no Ray import.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

from sweeplab.raycompat._uses import PrivateUse

PRIVATE_USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        "ray.tune.utils.util",
        "flatten_dict",
        ("dt",),
        "the simulator flattens a trial's config and results into Tune's `a/b` keys, as Tune "
        "does before a searcher or scheduler sees them; the function is marked deprecated and "
        "has no public replacement",
    ),
    PrivateUse(
        "ray.tune.utils.util",
        "merge_dicts",
        ("d1", "d2"),
        "the simulator merges a searcher's suggestion into the param space as Tune's "
        "`SearchGenerator` does; the function is marked deprecated",
    ),
    PrivateUse(
        "ray.tune.trainable",
        "wrap_function",
        ("train_func",),
        "the function trainable's class (a DeveloperAPI), subclassed for a `cleanup` that "
        "aborts the group; a function trainable has no public stop hook",
    ),
    PrivateUse(
        "ray.tune.schedulers",
        "MedianStoppingRule._hard_stop",
        None,
        "whether the rule stops trials or pauses them, which decides actor reuse; the flag "
        "has no public accessor",
    ),
    PrivateUse(
        "ray.tune.schedulers",
        "PopulationBasedTraining._exploit",
        ("tune_controller", "trial", "trial_to_clone"),
        "overridden to learn of each exploit (donor, iteration) and pin its checkpoint; PBT has "
        "no public exploit callback",
    ),
    PrivateUse(
        "ray.tune.schedulers",
        "PopulationBasedTraining._trial_state",
        None,
        "PBT's per-trial state, read for the iteration an exploited trial restarts at",
    ),
    PrivateUse(
        "ray.tune.schedulers.pbt",
        "_PBTTrialState.last_train_time",
        None,
        "that iteration, in PBT's own time unit",
    ),
    PrivateUse(
        "ray.tune.schedulers",
        "PopulationBasedTraining._next_perturbation_sync",
        None,
        "the iteration synchronous PBT's next round waits for, read to learn that a result "
        "completed a round (its trial then trains on instead of pausing); PBT tells no one",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._actor_cache",
        None,
        "the trial actors Tune keeps for reuse, replaced by a cache that keeps as many idle "
        "actors as trials run at once; Tune keeps one when no trial waits for an actor, and no "
        "setting changes that",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TrialRunnerWrapper._tune_controller",
        None,
        "the controller behind the wrapper that Tune hands a scheduler, whose actor cache that is",
    ),
    PrivateUse(
        "ray.tune.utils.object_cache",
        "_ObjectCache",
        (),
        "that cache's class, subclassed: `cache_object` and `flush_cached_objects` decide what "
        "is kept",
    ),
    PrivateUse(
        "ray.tune.utils.object_cache",
        "_ObjectCache.cache_object",
        ("key", "obj"),
        "called by Tune when a trial pauses or ends, with the trial's resources as the key",
    ),
    PrivateUse(
        "ray.tune.utils.object_cache",
        "_ObjectCache.flush_cached_objects",
        ("force_all",),
        "called by Tune after every step, and with `force_all` when the experiment ends",
    ),
    PrivateUse(
        "ray.train._internal.checkpoint_manager",
        "_CheckpointManager._latest_checkpoint_result",
        None,
        "the checkpoint a paused trial restarts from, re-pointed to a copy of the donor's, "
        "which the donor may delete before the recipient starts; PBT itself writes it so",
    ),
    PrivateUse(
        "ray.train._internal.session",
        "_TrainingResult.__init__",
        ("checkpoint", "metrics"),
        "the record that field holds",
    ),
    PrivateUse(
        "ray.tune.result",
        "RESULT_DUPLICATE",
        None,
        "the key Tune adds to the result it repeats when a function trainable returns; it is "
        "no metric, and Tune's result keys have no public list (its value is "
        "`sweeplab.keys.TUNE_DUPLICATE_RESULT_KEY`)",
    ),
    PrivateUse(
        "ray.tune.tuner",
        "Tuner._local_tuner",
        None,
        "a restored Tuner's own settings, unpickled from the experiment folder; a resumed "
        "sweep wires its fresh callbacks and exploit hook into them, since `Tuner.restore` "
        "takes neither and the pickled copies are inert",
    ),
    PrivateUse(
        "ray.tune.impl.tuner_internal",
        "TunerInternal._tune_config",
        None,
        "the restored TuneConfig, whose scheduler (PBT) gets the fresh exploit hook",
    ),
    PrivateUse(
        "ray.tune.trainable.metadata",
        "_TrainingRunMetadata.metric_analysis",
        None,
        "a trial's running statistics of each metric (min, max, averages of the last 5 and 10 "
        "results), emptied when the trial ends: sweeplab never reads them, and at 10,000 "
        "trials they held most of the driver's memory per trial; Tune has no switch for them",
    ),
    PrivateUse(
        "ray.tune.trainable.metadata",
        "_TrainingRunMetadata.metric_n_steps",
        None,
        "the windows of the last 5 and 10 values behind those averages, emptied with them",
    ),
    PrivateUse(
        "ray.tune.registry",
        "_global_registry",
        None,
        "Tune's registry of trainables, whose lookups a sweep caches while it runs: Tune reads "
        "a trial's class from the GCS several times per trial, and has no setting to keep it",
    ),
    PrivateUse(
        "ray.tune.registry",
        "_Registry.get",
        ("category", "key"),
        "the lookup of a registered value, answered from the cache for trainable classes",
    ),
    PrivateUse(
        "ray.tune.registry",
        "_Registry.contains",
        ("category", "key"),
        "whether a value is registered, answered from the cache for trainable classes",
    ),
    PrivateUse(
        "ray.tune.analysis.experiment_analysis",
        "ExperimentAnalysis._fetch_trial_dataframes",
        (),
        "read at the end of `fit`: every trial's result.json into a pandas DataFrame, for "
        "`Result.metrics_dataframe`; a sweep run by sweeplab reads no such frame, and no "
        "argument of `Tuner`, `TuneConfig` or `RunConfig` turns the read off",
    ),
)


def function_trainable_class(train_func: Callable[..., Any]) -> type:
    """The Tune trainable class Tune itself would make of the function `train_func`."""
    from ray.tune.trainable import wrap_function

    return wrap_function(train_func)


# --- Schedulers ----------------------------------------------------------------------------


def median_rule_stops_hard(rule: Any) -> bool:
    """Whether a `MedianStoppingRule` stops the trials it rules out (False: it pauses them).

    A rule without the flag is taken to pause.
    """
    return getattr(rule, "_hard_stop", False) is True


@functools.cache
def pbt_with_exploit_hook() -> type:
    """`PopulationBasedTraining` that calls `self.after_exploit(trial, donor)` after each exploit.

    Subclasses define `after_exploit`; the trial then already has its new config and the
    donor's checkpoint to restart from.
    """
    from ray.tune.schedulers import PopulationBasedTraining

    class ExploitHookedPBT(PopulationBasedTraining):
        def _exploit(self, tune_controller: Any, trial: Any, trial_to_clone: Any) -> None:
            super()._exploit(tune_controller, trial, trial_to_clone)
            self.after_exploit(trial, trial_to_clone)

        def after_exploit(self, trial: Any, donor: Any) -> None:
            pass

    return ExploitHookedPBT


def pbt_exploit_iteration(scheduler: Any, trial: Any) -> int:
    """The iteration (PBT's time unit) at which an exploited `trial` restarts."""
    return int(scheduler._trial_state[trial].last_train_time)


def pbt_next_round(scheduler: Any) -> float:
    """The iteration that synchronous PBT's next round waits for; it moves when a round ends."""
    return float(scheduler._next_perturbation_sync)


# --- The controller's actor cache ----------------------------------------------------------


@functools.cache
def _keep_up_to_cache() -> type:
    """Tune's actor cache, keeping up to `keep` objects that no waiting trial asked for."""
    from ray.tune.utils.object_cache import _ObjectCache

    class KeepUpTo(_ObjectCache):
        def __init__(self, keep: int) -> None:
            super().__init__(may_keep_one=True)
            self.keep = keep

        def cache_object(self, key: Any, obj: Any) -> bool:
            wanted = len(self._cached_objects[key]) < self._max_num_objects[key]
            if not wanted and self._num_cached_objects >= self.keep:
                return False
            self._cached_objects[key].append(obj)
            self._num_cached_objects += 1
            return True

        def flush_cached_objects(self, force_all: bool = False) -> Any:
            if force_all:
                yield from super().flush_cached_objects(force_all=True)
                return
            for key, objs in self._cached_objects.items():
                wanted = self._max_num_objects[key]
                while len(objs) > wanted and self._num_cached_objects > self.keep:
                    self._num_cached_objects -= 1
                    yield objs.pop(0)

    return KeepUpTo


def keep_idle_trial_actors(tune_controller: Any, up_to: int) -> None:
    """Lets Tune keep up to `up_to` idle trial actors for paused trials to resume into.

    Tune keeps a stopping trial's actor only for a trial that waits for one, or a single actor
    when none waits. Where trials pause together (a PBT round's end, a HyperBand rung), a
    second pause before the first resume stopped its actor, and the next resume started a new
    process: a second or more, the trials one at a time meanwhile. `tune_controller` is what
    Tune hands a scheduler (its wrapper of the controller). Idempotent and cheap once done: a
    scheduler calls it at every step.
    """
    controller = getattr(tune_controller, "_tune_controller", tune_controller)
    cache = controller._actor_cache
    keep = max(1, up_to)
    if getattr(cache, "keep", None) == keep:
        return
    replacement = _keep_up_to_cache()(keep)
    replacement.__dict__.update(
        {k: v for k, v in vars(cache).items() if k not in ("keep", "_may_keep_one")}
    )
    controller._actor_cache = replacement


# --- A trial's restore checkpoint ----------------------------------------------------------


def trial_restore_checkpoint(trial: Any) -> Any | None:
    """The Tune checkpoint that `trial` restarts from, or None."""
    latest = trial.run_metadata.checkpoint_manager._latest_checkpoint_result
    return None if latest is None else latest.checkpoint


def replace_trial_restore_checkpoint(trial: Any, path: str) -> None:
    """Makes (paused) `trial` restart from the checkpoint at `path`, keeping its metrics."""
    from ray.train._internal.session import _TrainingResult
    from ray.tune import Checkpoint

    manager = trial.run_metadata.checkpoint_manager
    latest = manager._latest_checkpoint_result
    manager._latest_checkpoint_result = _TrainingResult(
        checkpoint=Checkpoint(path), metrics=latest.metrics if latest is not None else {}
    )


def rewire_restored_tuner(
    tuner: Any, *, callbacks: list[Any], on_exploit: Callable[..., None] | None
) -> None:
    """Gives a restored Tuner fresh Tune callbacks and its scheduler a fresh exploit hook.

    Tune pickles its run config (callbacks included) and its scheduler into the experiment
    folder; the sinks they fed hold threads and clients, so their restored copies are inert.
    A scheduler with an ``on_exploit`` hook (sweeplab's PBT) gets `on_exploit`.
    """
    internal = tuner._local_tuner
    internal.get_run_config().callbacks = list(callbacks)
    scheduler = internal._tune_config.scheduler
    if hasattr(scheduler, "set_exploit_hook"):
        scheduler.set_exploit_hook(on_exploit)


def trial_error_text(trial: Any) -> str | None:
    """The text of a Tune trial's error file (its traceback), or None when it has none."""
    from pathlib import Path

    try:
        if trial.error_file and Path(trial.error_file).exists():
            return Path(trial.error_file).read_text(errors="replace")
    except OSError:
        pass
    return None


# --- An ended trial's statistics ---------------------------------------------------------------


def forget_trial_statistics(trial: Any) -> None:
    """Empties Tune's running statistics of an ended trial's metrics.

    Tune keeps, for every number in a trial's results, its min, max, mean and the averages of
    its last 5 and 10 values, with the deques behind them, and their JSON for the experiment's
    snapshots: about 40 objects per metric, kept for every trial to the end of the sweep. Only
    Tune's `ExperimentAnalysis` reads them (its ``scope`` of a best trial), which sweeplab does
    not use. A trial that runs again (a resumed errored trial) starts them anew, as Tune does
    for a new metric.
    """
    metadata = getattr(trial, "run_metadata", None)
    if metadata is not None and hasattr(metadata, "metric_n_steps"):
        # Setting them through the object drops its cached JSON too.
        metadata.metric_analysis = {}
        metadata.metric_n_steps = {}


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


def tune_flattener() -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Tune's function that gives a nested dict `a/b` keys, as Tune flattens a trial's config
    and results (returned, not wrapped: the simulator calls it for every result)."""
    from ray.tune.utils.util import flatten_dict

    flatten: Callable[[dict[str, Any]], dict[str, Any]] = flatten_dict
    return flatten


def tune_merge(base: dict[str, Any], suggested: dict[str, Any]) -> dict[str, Any]:
    """`suggested` merged into a copy of `base`, as Tune merges a searcher's suggestion into
    the param space."""
    from ray.tune.utils.util import merge_dicts

    merged: dict[str, Any] = merge_dicts(base, suggested)
    return merged
