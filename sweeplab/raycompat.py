"""The one module that touches Ray's private and internal APIs (and MLflow's).

Everything sweeplab needs from Ray (and MLflow) beyond its public API goes through the small
functions here, and every private symbol they use is a row of :data:`PRIVATE_USES` saying what
it is for and why no public API serves. The module has one section per area, each with its rows
beside its functions:

- Ray Train V2 workers and controllers, and `ray.train.*` routed in process;
- the data loaders `prepare_data_loader` returns, timed for the data-wait metric;
- Tune's trainable and its registry, scheduler state (median rule, PBT), actor cache, trial
  checkpoints, an ended trial's statistics and the duplicate-result key;
- placement groups with their creators, free resources per node, the head node;
- the Optuna study and HyperOpt trials behind Tune's searchers;
- the tracking store behind an `MlflowClient`, MLflow's name rule, artifact URIs and REST
  requests, for bulk reads and writes;
- the C library's functions called through ``ctypes`` (:data:`LIBC_USES`), which no Python
  module wraps.

``tests/raycompat/test_raycompat.py`` imports each row's symbol and checks the parameters
sweeplab passes, so a Ray upgrade that moves one fails that fast test, not a sweep.
``docs/upgrading-ray.md`` lists the rows for people.

This module imports nothing else of sweeplab, and Ray (with Optuna, HyperOpt and MLflow) only
inside its functions: ``sweeplab status`` and ``preview`` must start fast.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.abc
import json
import os
import shutil
import sys
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ray.train.v2._internal.execution.train_fn_utils import (
        DistributedTrainFnUtils as DistributedTrainFnUtils,
    )

__all__ = [
    "LIBC_USES",
    "MLFLOW_SCHEMA_REVISIONS",
    "MLFLOW_SCHEMA_USES",
    "PRIVATE_USES",
    "RELEASE_HOOK",
    "DistributedTrainFnUtils",
    "LibcUse",
    "MlflowSql",
    "NewTrials",
    "PlacementGroupRecord",
    "PrivateUse",
    "ReleasedResult",
    "ReleasedTrials",
    "SchemaUse",
    "abort_train_controller",
    "current_train_context",
    "current_train_fn_utils",
    "disable_tune_session_guard",
    "ended_trials_released",
    "forget_trial_statistics",
    "free_resources_per_node",
    "function_trainable_class",
    "head_node_id",
    "hyperopt_trials",
    "install_train_fn_utils",
    "keep_idle_trial_actors",
    "lean_torch_trainer",
    "let_starting_trial_actors_start",
    "libc_function",
    "median_rule_stops_hard",
    "mlflow_accepts_name",
    "mlflow_schema_mismatch",
    "optuna_study",
    "pbt_exploit_iteration",
    "pbt_next_round",
    "pbt_with_exploit_hook",
    "placement_groups_with_creators",
    "prepared_data_loader",
    "replace_trial_restore_checkpoint",
    "rest_get",
    "rewire_restored_tuner",
    "route_train_calls_in_process",
    "run_artifact_uri",
    "run_when_imported",
    "start_worker_from_checkpoint",
    "time_prepared_loader_fetches",
    "tracking_store",
    "trainable_registry_cached",
    "transform_reported_metrics",
    "trial_dataframes_not_read",
    "trial_error_text",
    "trial_restore_checkpoint",
    "tune_flattener",
    "tune_merge",
]


@dataclasses.dataclass(frozen=True)
class PrivateUse:
    """One Ray (or MLflow) symbol outside its public API that sweeplab relies on.

    Attributes:
        module: The module it is imported from.
        attribute: Its dotted path in `module` (``Class.method``, ``Class.instance_attribute``).
        params: For a callable, the parameters sweeplab passes by name or position (``self``
            excluded); None for an attribute that is read or written.
        why: What sweeplab uses it for, and why no public API serves.
    """

    module: str
    attribute: str
    params: tuple[str, ...] | None
    why: str


# -------------------------------------------------------------------------------------------------
# Ray Train V2 internals: a worker's context and the utilities behind `ray.train.*` calls.
# A trial's Train workers start from a given checkpoint and report through wrapped utilities; a
# one-worker trial runs the user's function in its own process with `ray.train.*` routed to Tune;
# a stopped trial's Train controller is aborted.
# -------------------------------------------------------------------------------------------------

_TRAIN_V2 = "ray.train.v2._internal.execution"

_TRAIN_USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        f"{_TRAIN_V2}.context",
        "get_train_context",
        (),
        "a worker's Train context: Train V2 dropped `resume_from_checkpoint`, and no public "
        "API sets the checkpoint `ray.train.get_checkpoint()` returns",
    ),
    PrivateUse(
        f"{_TRAIN_V2}.context",
        "TrainContext.checkpoint",
        None,
        "written before the user's function runs, so a restarted trial starts from its checkpoint",
    ),
    PrivateUse(
        f"{_TRAIN_V2}.controller",
        "TrainController.abort",
        (),
        "releases a stopped trial's workers at once; `ray.kill` would leave its placement group "
        "to Train's cleaner, and the next trial would wait for the CPUs",
    ),
    PrivateUse(
        f"{_TRAIN_V2}.train_fn_utils",
        "LocalTrainFnUtils.__init__",
        ("experiment_name",),
        "Train's in-process utilities behind `ray.train.*`, subclassed so a one-worker trial's "
        "reports go to Tune; `num_workers=0` refuses to run inside a Tune trial (ray#49454)",
    ),
    PrivateUse(
        f"{_TRAIN_V2}.train_fn_utils",
        "LocalTrainFnUtils.report",
        ("metrics", "checkpoint"),
        "overridden: where `ray.train.report` lands in an in-process trial",
    ),
    PrivateUse(
        f"{_TRAIN_V2}.train_fn_utils",
        "LocalTrainFnUtils._last_checkpoint",
        None,
        "what `ray.train.get_checkpoint()` returns in process: the restored, then the latest one",
    ),
    PrivateUse(
        f"{_TRAIN_V2}.train_fn_utils",
        "LocalTrainFnUtils._last_metrics",
        None,
        "kept as Train's own `report` keeps it",
    ),
    PrivateUse(
        f"{_TRAIN_V2}.train_fn_utils",
        "set_train_fn_utils",
        ("train_fn_utils",),
        "installs the utilities behind `ray.train.*` in a one-worker trial's process and for "
        "each trial a warm slot runs; no public API selects them",
    ),
    PrivateUse(
        f"{_TRAIN_V2}.train_fn_utils",
        "get_train_fn_utils",
        (),
        "the worker's utilities, whose `report` gains the data-wait metric and which a warm "
        "slot wraps; Train has no public hook on a worker's reports",
    ),
    PrivateUse(
        f"{_TRAIN_V2}.train_fn_utils",
        "DistributedTrainFnUtils",
        None,
        "the utilities Train installs in its workers, which a warm slot wraps for each trial "
        "it runs; no public API routes a worker's `ray.train.*` calls",
    ),
    PrivateUse(
        "ray.train.v2.api.data_parallel_trainer",
        "DataParallelTrainer._create_default_callbacks",
        (),
        "overridden to leave out the datasets callback of a trainer given no datasets: it "
        "starts a `DatasetManager` actor (a process importing Ray Data, about 2 s of CPU) at "
        "every group start; Train has no switch for it",
    ),
    PrivateUse(
        "ray.train.v2._internal.callbacks.datasets",
        "DatasetsCallback",
        None,
        "the callback left out; matched by class",
    ),
    PrivateUse(
        "ray.tune.trainable.trainable_fn_utils",
        "_in_tune_session",
        (),
        "the guard that refuses `ray.train.*` inside a Tune trial, turned off in the trial that "
        "routes them to Tune itself; no public switch",
    ),
)


def current_train_context() -> Any:
    """This Train worker's own context (raises outside a Train worker)."""
    from ray.train.v2._internal.execution.context import get_train_context

    return get_train_context()


def current_train_fn_utils() -> Any:
    """The object this process's `ray.train.report`, `get_checkpoint` and `get_context` use."""
    from ray.train.v2._internal.execution.train_fn_utils import get_train_fn_utils

    return get_train_fn_utils()


def install_train_fn_utils(utils: Any) -> None:
    """Routes this process's `ray.train.*` calls to `utils` (a Train `TrainFnUtils`)."""
    from ray.train.v2._internal.execution.train_fn_utils import set_train_fn_utils

    set_train_fn_utils(utils)


@functools.cache
def lean_torch_trainer() -> type:
    """`TorchTrainer`, without the per-group actor that serves Ray Datasets when none is given.

    Train starts a `DatasetManager` actor at every worker group start, datasets or not; a
    sweep's trainers pass none (the user's function loads its own data), so for them that actor
    is a process and about 2 s of CPU for nothing.
    """
    from ray.train.torch import TorchTrainer
    from ray.train.v2._internal.callbacks.datasets import DatasetsCallback

    class LeanTorchTrainer(TorchTrainer):
        def _create_default_callbacks(self) -> list[Any]:
            callbacks = super()._create_default_callbacks()
            if self.datasets:
                return callbacks
            return [c for c in callbacks if not isinstance(c, DatasetsCallback)]

    return LeanTorchTrainer


def start_worker_from_checkpoint(path: str) -> None:
    """Makes `ray.train.get_checkpoint()` in this Train worker return the checkpoint at `path`.

    Unless Train already restored one: a group restarted after a failure resumes its own run.
    """
    import ray.train

    context = current_train_context()
    if context.checkpoint is None:
        context.checkpoint = ray.train.Checkpoint(path)


def abort_train_controller(controller: Any) -> Any:
    """Asks a Train controller actor to abort its group; returns the call's object ref."""
    return controller.abort.remote()


def disable_tune_session_guard() -> None:
    """Lets `ray.train.*` run in this process although it is a Tune trial (process-wide)."""
    from ray.tune.trainable import trainable_fn_utils

    # Train looks the guard up in this module at each call, so replacing it here is enough.
    trainable_fn_utils._in_tune_session = lambda: False


@functools.cache
def _tune_routed_train_fn_utils() -> type:
    from ray.train.v2._internal.execution.train_fn_utils import LocalTrainFnUtils

    class TuneRoutedTrainFnUtils(LocalTrainFnUtils):
        """Train's local-mode utilities whose `report` goes to the Tune trial."""

        def __init__(
            self, *, experiment_name: str, restored: Any, reporter: Callable[..., Any]
        ) -> None:
            super().__init__(experiment_name=experiment_name)
            self._last_checkpoint = restored
            self._reporter = reporter

        def report(
            self, metrics: dict[str, Any], checkpoint: Any = None, *args: Any, **kw: Any
        ) -> None:
            persisted = self._reporter(dict(metrics), checkpoint)
            self._last_metrics = metrics
            if persisted is not None:
                self._last_checkpoint = persisted

    return TuneRoutedTrainFnUtils


def route_train_calls_in_process(
    *, experiment_name: str, restored: Any, reporter: Callable[[dict[str, Any], Any], Any]
) -> None:
    """Serves the user's `ray.train.*` calls in this process, as a one-worker group would.

    Args:
        experiment_name: What `ray.train.get_context().get_experiment_name()` returns.
        restored: The `ray.train.Checkpoint` that `ray.train.get_checkpoint()` first returns.
        reporter: Called with the metrics and checkpoint of each `ray.train.report`; returns
            the persisted `ray.train.Checkpoint` (then `get_checkpoint()`'s answer) or None.
    """
    utils_class = _tune_routed_train_fn_utils()
    install_train_fn_utils(
        utils_class(experiment_name=experiment_name, restored=restored, reporter=reporter)
    )


def transform_reported_metrics(transform: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Passes the metrics of each `ray.train.report` of this Train worker through `transform`."""
    utils = current_train_fn_utils()
    report = utils.report

    def report_transformed(metrics: dict[str, Any], *rest: Any, **kwargs: Any) -> Any:
        return report(transform(metrics), *rest, **kwargs)

    utils.report = report_transformed


# -------------------------------------------------------------------------------------------------
# The loaders `ray.train.torch.prepare_data_loader` returns, timed for the data-wait metric.
# -------------------------------------------------------------------------------------------------

_LOADER_MODULE = "ray.train.torch.train_loop_utils"

_LOADER_USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        _LOADER_MODULE,
        "_WrappedDataLoader._prefetch_next_batch",
        (),
        "the synchronous batch fetch of every prepared loader, timed for the data-wait metric; "
        "`prepare_data_loader` has no public hook",
    ),
    PrivateUse(
        _LOADER_MODULE,
        "_WrappedDataLoader.__iter__",
        (),
        "the start of an epoch, where the data-wait window opens",
    ),
    PrivateUse(
        _LOADER_MODULE,
        "_WrappedDataLoader.next_batch",
        None,
        "None once the epoch's data is exhausted: the data-wait window closes",
    ),
    PrivateUse(
        _LOADER_MODULE,
        "_WrappedDataLoader.__init__",
        ("base_dataloader", "device", "auto_transfer"),
        "builds the loader `prepare_data_loader` returns outside a Train worker, so a fast "
        "test can time its fetches; `prepare_data_loader` needs a Train session",
    ),
)


def time_prepared_loader_fetches(
    *, on_epoch_start: Callable[[], None], on_fetch: Callable[[float, bool], None]
) -> None:
    """Times the batch fetches of every loader `prepare_data_loader` returns (process-wide).

    Call once per process. `on_epoch_start()` runs when such a loader's iteration starts;
    `on_fetch(seconds, exhausted)` after each fetch, with `exhausted` True once the epoch's data
    is used up. The loaders' module imports torch (1.5 s of CPU), so it is not imported here:
    the loaders are patched now if it is already imported, else as soon as the trial imports it.
    """

    def patch(module: Any) -> None:
        loader_class = module._WrappedDataLoader
        fetch = loader_class._prefetch_next_batch
        start = loader_class.__iter__

        @functools.wraps(fetch)
        def _prefetch_next_batch(self: Any) -> None:
            began = time.perf_counter()
            try:
                fetch(self)
            finally:
                on_fetch(time.perf_counter() - began, self.next_batch is None)

        @functools.wraps(start)
        def __iter__(self: Any) -> Any:
            on_epoch_start()
            return start(self)

        loader_class._prefetch_next_batch = _prefetch_next_batch
        loader_class.__iter__ = __iter__

    run_when_imported(_LOADER_MODULE, patch)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs `then(module)` right after the module `name` is first imported, then steps aside."""

    def __init__(self, name: str, then: Callable[[Any], None]) -> None:
        self.name = name
        self.then = then

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)  # the other finders find it; this runs once
        for finder in sys.meta_path:
            spec = getattr(finder, "find_spec", lambda *_: None)(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            exec_module, then = spec.loader.exec_module, self.then

            def exec_then(module: Any) -> None:
                exec_module(module)
                then(module)

            spec.loader.exec_module = exec_then
        return spec


def run_when_imported(name: str, then: Callable[[Any], None]) -> None:
    """`then(module)` now if the module `name` is imported, else once it is, in this process."""
    module = sys.modules.get(name)
    if module is not None:
        then(module)
        return
    sys.meta_path.insert(0, _AfterImport(name, then))


def prepared_data_loader(loader: Any, device: Any) -> Any:
    """`loader` wrapped as `prepare_data_loader` wraps it on `device` (no transfer; for tests)."""
    from ray.train.torch.train_loop_utils import _WrappedDataLoader

    return _WrappedDataLoader(loader, device, auto_transfer=False)


# -------------------------------------------------------------------------------------------------
# Ray Tune internals: the trainable class, scheduler state, the actor cache, trial checkpoints.
# Also the key Tune adds to a repeated result, spelled out so the tracker needs no Ray import.
# -------------------------------------------------------------------------------------------------

_TUNE_USES: tuple[PrivateUse, ...] = (
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
        "TuneController._maybe_reuse_cached_actor",
        ("trial",),
        "gives a waiting trial a cached actor and kills the actor already starting for it; "
        "wrapped so that a starting actor is left to start (no setting turns the kill off)",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._trial_to_actor",
        None,
        "the actor Tune requested for a trial, read to learn whether one is starting for it",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._started_actors",
        None,
        "the actors that finished starting; an actor with resources that is not here is starting",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._resetting_trials",
        None,
        "trials whose reused actor is being reset: Tune's own rule is kept for them",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._actor_manager",
        None,
        "Tune's actor manager, which knows whether an actor has its resources",
    ),
    PrivateUse(
        "ray.air.execution._internal.actor_manager",
        "RayActorManager.is_actor_started",
        ("tracked_actor",),
        "true once an actor has its resources and its process is asked to start it",
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
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController.step",
        (),
        "one step of Tune's loop; wrapped while a sweep of a stop-only scheduler runs so that "
        "after each step the trials that ended leave the controller (`ended_trials_released`): "
        "Tune keeps every trial, its state and its cached JSON to the end, about 10 KB a trial "
        "on the driver, and has no setting to let them go",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController.save_to_dir",
        (),
        "the experiment snapshot; wrapped to write the released trials' entries too, one at a "
        "time, in Tune's own format, so that a resumed sweep finds every trial",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._trials",
        None,
        "the controller's list of trials, which a released trial leaves (with the sets "
        "`_live_trials` and `_stopped_trials`, `_trials_to_cache` and `_pending_trials_list`)",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._trial_metadata",
        None,
        "each trial's snapshot entry (its JSON and its run metadata's JSON); a released trial's "
        "is kept compressed outside the controller",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._live_trials",
        None,
        "the trials not yet ended; one of them is not released",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._stopped_trials",
        None,
        "the ended trials, which a released trial leaves",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._trials_to_cache",
        None,
        "the trials whose snapshot entry is out of date; a released trial's is made then",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._pending_trials_list",
        None,
        "the queue of waiting trials, which keeps ended trials until it is scanned",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._get_trial_checkpoints",
        (),
        "the controller's snapshot entries, brought up to date, in its snapshot",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._search_alg",
        None,
        "the searcher, whose state the snapshot writes beside the trials",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._session_str",
        None,
        "the session name the searcher's and callbacks' snapshot files carry",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._start_time",
        None,
        "the experiment's start time, in the snapshot's `stats`",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._callbacks",
        None,
        "the run's callbacks, whose per-trial state of a released trial is dropped",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._storage",
        None,
        "where the snapshot is written (`experiment_driver_staging_path`)",
    ),
    PrivateUse(
        "ray.tune.analysis.experiment_analysis",
        "ExperimentAnalysis._load_trials",
        (),
        "at the end of `fit`, Tune reads every trial back from the snapshot when the "
        "controller holds none; with every trial released it returns none instead",
    ),
    PrivateUse(
        "ray.train._internal.syncer",
        "_BackgroundProcess.is_running",
        None,
        "whether Tune's copy of the staging folder to the storage path is running; a released "
        "trial's files leave the staging folder only while none is",
    ),
    PrivateUse(
        "ray.train._internal.syncer",
        "_BackgroundSyncer._sync_process",
        None,
        "the running copy, if any",
    ),
    PrivateUse(
        "ray.tune.utils.serialization",
        "_loads_with_cloudpickle",
        ("s",),
        "reads a released trial's config and last result back from its snapshot entry, as "
        "Tune's own restore does",
    ),
    PrivateUse(
        "ray.tune.logger.csv",
        "CSVLoggerCallback._trial_continue",
        None,
        "Tune's default loggers and progress callback keep a dict or set entry per trial, "
        "keyed by the trial, to the end; `_TRIAL_KEYED_CALLBACK_STATE` names them",
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


@functools.cache
def let_starting_trial_actors_start() -> None:
    """Tune no longer kills a trial actor that is starting to give its trial a cached one.

    When a trial ends and its actor is cached for reuse, Tune hands it to the next waiting
    trial, and if that trial's own actor already has its resources and is starting, Tune
    kills it. Where an actor takes longer to start than the gap between two trial ends (many
    slots, short trials, or a busy node), every new actor is killed before it is ready: on the
    loopback cluster of `benchmarks.scale_out`, 11 of 32 slots ever ran trials. With this, a
    trial whose actor is starting waits for it, and the cached actor goes to a trial without
    one. A trial whose actor still waits for resources gives it up as before. Process-wide,
    once.
    """
    from ray.tune.execution.tune_controller import TuneController

    reuse = TuneController._maybe_reuse_cached_actor

    @functools.wraps(reuse)
    def _maybe_reuse_cached_actor(self: Any, trial: Any) -> bool:
        own = self._trial_to_actor.get(trial)
        if (
            own is not None
            and trial not in self._resetting_trials
            and self._actor_manager.is_actor_started(own)  # resources granted: it is starting
            and own not in self._started_actors
        ):
            return False
        return bool(reuse(self, trial))

    TuneController._maybe_reuse_cached_actor = _maybe_reuse_cached_actor


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


# --- Ended trials released from Tune's controller ------------------------------------------------

# Per-trial state that Tune's default callbacks keep to the end of a run, keyed by the trial, by
# class name (a subclass's base counts). A released trial's entries are dropped.
_TRIAL_KEYED_CALLBACK_STATE: dict[str, tuple[str, ...]] = {
    "CSVLoggerCallback": ("_trial_continue", "_trial_files", "_trial_csv"),
    "JsonLoggerCallback": ("_trial_configs", "_trial_files"),
    "TBXLoggerCallback": ("_trial_writer", "_trial_result"),
    "TrialProgressCallback": (
        "_last_print",
        "_last_print_iteration",
        "_completed_trials",
        "_last_result_str",
        "_last_result",
    ),
}

# A Tune callback with a method of this name is told of the trials about to be released.
RELEASE_HOOK = "on_trials_released"


@dataclasses.dataclass(frozen=True)
class ReleasedResult:
    """What a sweep reads of a released trial, with the attributes of Tune's ``Result``."""

    metrics: dict[str, Any]
    config: dict[str, Any]
    path: str
    error: None = None


class NewTrials:
    """Which of the controller's trials a Tune callback has not seen, at each step.

    Tune appends each new trial to its list (a retried trial moves to its end), so the new
    ones are those after the ones seen: a pass over the whole list at every step would be
    quadratic in the sweep's length. A released trial leaves the list; `released` keeps the
    count right.
    """

    def __init__(self) -> None:
        self._seen = 0
        self._list: list[Any] = []

    def since_last(self, trials: list[Any]) -> list[Any]:
        """The trials of `trials` (the controller's list) added since the last call."""
        new = trials[self._seen :]
        self._seen, self._list = len(trials), trials
        return new

    def released(self, trials: list[Any]) -> None:
        """`trials` are about to leave the list last seen."""
        gone = {id(trial) for trial in trials}
        self._seen -= sum(1 for trial in self._list[: self._seen] if id(trial) in gone)


class ReleasedTrials:
    """The ended trials that a sweep's Tune controller let go of (`ended_trials_released`).

    Each is kept as its snapshot entry, the JSON text Tune writes for it (the trial's JSON and
    its run metadata's JSON), one line each in a single compressed stream: neighbouring entries
    share most of their text, so a trial costs a few hundred bytes instead of Tune's live
    objects and their cached JSON. Reading the stream back decompresses it a chunk at a time,
    so neither a snapshot nor the sweep's ranking holds more than a chunk of it.
    """

    _CHUNK = 1 << 16

    def __init__(self) -> None:
        self._stream = bytearray()
        self._compressor = zlib.compressobj(1)
        self._paths: list[str] = []
        self._controller: Any = None
        self._files: list[tuple[str, str]] = []  # (staging folder, storage folder) to move

    def __len__(self) -> int:
        return len(self._paths)

    def add(self, path: str, entry: tuple[str, str]) -> None:
        """Keeps a released trial's snapshot entry and its path."""
        line = json.dumps(list(entry)) + "\n"  # JSON text holds no raw newline
        self._stream += self._compressor.compress(line.encode())
        self._stream += self._compressor.flush(zlib.Z_SYNC_FLUSH)
        self._paths.append(path)

    def _text(self) -> Iterator[bytes]:
        decompressor = zlib.decompressobj()
        for start in range(0, len(self._stream), self._CHUNK):
            yield decompressor.decompress(bytes(self._stream[start : start + self._CHUNK]))

    def lines(self) -> Iterator[bytes]:
        """Each released trial's snapshot entry as JSON text, in the order released."""
        rest = b""
        for chunk in self._text():
            *whole, rest = (rest + chunk).split(b"\n")
            yield from whole

    def write_entries(self, out: Any, after_others: bool) -> None:
        """Writes the entries to the text file `out` as elements of a JSON array (after a comma
        when other elements come before them), a chunk at a time."""
        if not self._paths:
            return
        if after_others:
            out.write(", ")
        ended = False  # the text so far ends with an entry's newline
        for chunk in self._text():
            text = chunk.decode("ascii")  # `json.dumps` escapes every non-ASCII character
            if not text:
                continue
            if ended:
                out.write(", ")
            ended = text.endswith("\n")
            out.write((text[:-1] if ended else text).replace("\n", ", "))

    def results(self) -> Iterator[ReleasedResult]:
        """Each released trial's config, last result and path, as ``Tuner.fit``'s results
        would give them."""
        from ray.tune.utils.serialization import _loads_with_cloudpickle

        def field(document: str, key: str) -> dict[str, Any]:
            # Only this field is decoded as Tune would (a value JSON cannot hold is pickled in
            # it); the rest of the trial's JSON (its storage context, pickled) is not unpickled.
            value = json.loads(document).get(key) or {}
            return dict(_loads_with_cloudpickle(json.dumps(value)))

        for path, line in zip(self._paths, self.lines(), strict=True):
            trial_json, metadata_json = json.loads(line)
            yield ReleasedResult(
                metrics=field(metadata_json, "last_result"),
                config=field(trial_json, "config"),
                path=path,
            )

    def release_from(self, controller: Any) -> None:
        """Releases the trials of `controller` that ended and hold no actor."""
        from ray.tune.experiment import Trial

        if self._controller is None:
            self._controller = controller
        if controller is not self._controller:
            return  # another Tune run in this process: left as Tune keeps it
        self._hand_over_files(controller)
        held = controller._trial_to_actor
        ended = [
            trial
            for trial in controller._trials
            if trial.status == Trial.TERMINATED
            and trial not in held
            and trial not in controller._live_trials
        ]
        if not ended:
            return
        for callback in controller._callbacks._callbacks:
            hook = getattr(callback, RELEASE_HOOK, None)
            if hook is not None:
                hook(ended)
            for klass in type(callback).__mro__:
                for name in _TRIAL_KEYED_CALLBACK_STATE.get(klass.__name__, ()):
                    state = getattr(callback, name, None)
                    for trial in ended:
                        if isinstance(state, dict):
                            state.pop(trial, None)
                        elif isinstance(state, set):
                            state.discard(trial)
        for trial in ended:
            self.add(str(trial.path), trial.get_json_state())
            controller._trial_metadata.pop(trial.trial_id, None)
            controller._trials_to_cache.discard(trial)
            controller._stopped_trials.discard(trial)
            if _on_local_disk(trial):
                self._files.append((str(trial.local_path), str(trial.path)))
        gone = {id(trial) for trial in ended}
        controller._trials[:] = [t for t in controller._trials if id(t) not in gone]
        controller._pending_trials_list[:] = [
            t for t in controller._pending_trials_list if id(t) not in gone
        ]

    def _hand_over_files(self, controller: Any) -> None:
        """Moves the released trials' files (their results, params and progress, which Tune's
        loggers write to the driver's staging folder) to the storage path, while Tune is not
        copying that folder there.

        Tune copies the whole staging folder, every trial's files, at each snapshot: at 6,000
        trials a copy held 42 MB of the driver's memory, and it grows with the sweep. A released
        trial's files are complete (its loggers closed them when it ended), so they move once.
        """
        if not self._files:
            return
        running = getattr(controller._storage.syncer, "_sync_process", None)
        if running is not None and running.is_running:
            return  # moved at a later step, once the copy is done
        for staging, storage in self._files:
            with contextlib.suppress(OSError):  # what is left, Tune's next snapshot copies
                _move_tree(staging, storage)
        self._files.clear()

    def save_to_dir(self, controller: Any) -> None:
        """Tune's experiment snapshot (``TuneController.save_to_dir``), with the released
        trials' entries after the controller's own, written a chunk at a time."""
        from ray.tune.utils.serialization import TuneFunctionEncoder

        live = list(controller._get_trial_checkpoints().values())
        staging = controller._storage.experiment_driver_staging_path
        os.makedirs(staging, exist_ok=True)
        with open(os.path.join(staging, controller.experiment_state_file_name), "w") as f:
            f.write('{"trial_data": [')
            f.write(", ".join(json.dumps(list(entry)) for entry in live))
            self.write_entries(f, after_others=bool(live))
            f.write('], "runner_data": ')
            json.dump(controller.__getstate__(), f, cls=TuneFunctionEncoder)
            f.write(', "stats": ')
            json.dump({"start_time": controller._start_time}, f)
            f.write("}")
        controller._search_alg.save_to_dir(staging, session_str=controller._session_str)
        controller._callbacks.save_to_dir(staging, session_str=controller._session_str)


def _on_local_disk(trial: Any) -> bool:
    """Whether `trial`'s storage path is on this machine's file system."""
    import pyarrow.fs

    filesystem = getattr(trial.storage, "storage_filesystem", None)
    return isinstance(filesystem, pyarrow.fs.LocalFileSystem) and bool(trial.local_path)


def _move_tree(source: str, target: str) -> None:
    """Moves every file under `source` to the same place under `target` (replacing what is
    there), then removes `source`."""
    for folder, _, files in os.walk(source):
        into = os.path.join(target, os.path.relpath(folder, source))
        os.makedirs(into, exist_ok=True)
        for name in files:
            shutil.move(os.path.join(folder, name), os.path.join(into, name))
    shutil.rmtree(source, ignore_errors=True)


@contextlib.contextmanager
def ended_trials_released(enabled: bool = True) -> Iterator[ReleasedTrials]:
    """While a sweep runs: the trials that ended leave Tune's controller after each step.

    Tune keeps every trial of a run to its end: the `Trial` object, its storage context, its
    last result, its cached JSON, and an entry in each default callback. On the driver that was
    about 10 KB a trial, so a sweep's memory grew with its length. Inside this context each
    trial that ended (``TERMINATED``, no actor) is released after the step that ended it: its
    snapshot entry is kept compressed (`ReleasedTrials`), written with the others at each
    experiment snapshot, so a resumed sweep restores it as Tune would; the results that
    ``Tuner.fit`` returns then hold only the trials not released, and `ReleasedTrials.results`
    gives the others. Only for a scheduler that only stops trials: one that pauses or exploits
    (HyperBand, PBT) may come back to an ended trial. A trial that errored is not released.
    A callback with a method ``on_trials_released(trials)`` is told first. When every trial was
    released, ``fit`` would read them all back from the snapshot for its results (Tune does so
    when it is given no trials): it does not.
    """
    released = ReleasedTrials()
    if not enabled:
        yield released
        return
    from ray.tune.analysis.experiment_analysis import ExperimentAnalysis
    from ray.tune.execution.tune_controller import TuneController

    step, save = TuneController.step, TuneController.save_to_dir
    load = ExperimentAnalysis._load_trials

    @functools.wraps(step)
    def releasing_step(self: Any) -> None:
        step(self)
        released.release_from(self)

    @functools.wraps(save)
    def saving(self: Any) -> None:
        if self is released._controller and len(released):
            released.save_to_dir(self)
        else:
            save(self)

    @functools.wraps(load)
    def loading(self: Any) -> list[Any]:
        return [] if len(released) else list(load(self))

    TuneController.step, TuneController.save_to_dir = releasing_step, saving
    ExperimentAnalysis._load_trials = loading
    try:
        yield released
    finally:
        TuneController.step, TuneController.save_to_dir = step, save
        ExperimentAnalysis._load_trials = load


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


# -------------------------------------------------------------------------------------------------
# Ray Core state: placement groups with their creators, free resources per node, the head.
# -------------------------------------------------------------------------------------------------

_CLUSTER_USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        "ray._private.state",
        "state._connect_and_get_accessor",
        (),
        "the GCS placement-group table with each group's creator; the public "
        "`placement_group_table()` and `ray.util.state` omit the creating actor",
    ),
    PrivateUse(
        "ray._raylet",
        "GlobalStateAccessor.get_placement_group_table",
        (),
        "the raw table rows",
    ),
    PrivateUse(
        "ray.core.generated.gcs_pb2",
        "PlacementGroupTableData.FromString",
        (),
        "decodes a row: a trainer group whose creating Train controller died with its node is "
        "an orphan holding CPUs",
    ),
    *(
        PrivateUse(
            "ray.core.generated.gcs_pb2",
            f"PlacementGroupTableData.{field}",
            None,
            "a field of that row",
        )
        for field in (
            "placement_group_id",
            "creator_actor_id",
            "creator_actor_dead",
            "is_detached",
            "state",
            "REMOVED",
        )
    ),
    PrivateUse(
        "ray._private.state",
        "available_resources_per_node",
        (),
        "free resources of each node for `sweeplab status`; public Ray has cluster-wide "
        "`ray.available_resources()` only (Ray's own tooling uses this)",
    ),
    PrivateUse(
        "ray._common.constants",
        "HEAD_NODE_RESOURCE_NAME",
        None,
        "the resource only the head node has, to find the head for the slots' hosts; "
        "`ray.nodes()` does not say which node is the head, and `ray.util.state` needs the "
        "dashboard",
    ),
)


@dataclasses.dataclass(frozen=True)
class PlacementGroupRecord:
    """A placement group and who created it, as the GCS knows it."""

    placement_group_id: bytes
    creator_actor_id: bytes
    creator_actor_dead: bool
    is_detached: bool
    removed: bool


def placement_groups_with_creators() -> list[PlacementGroupRecord]:
    """Every placement group of the connected cluster, with its creating actor."""
    from ray._private.state import state
    from ray.core.generated import gcs_pb2

    table_data = gcs_pb2.PlacementGroupTableData
    records = []
    for raw in state._connect_and_get_accessor().get_placement_group_table():
        info = table_data.FromString(raw)
        records.append(
            PlacementGroupRecord(
                placement_group_id=info.placement_group_id,
                creator_actor_id=info.creator_actor_id,
                creator_actor_dead=info.creator_actor_dead,
                is_detached=info.is_detached,
                removed=info.state == table_data.REMOVED,
            )
        )
    return records


def free_resources_per_node() -> dict[str, Mapping[str, float]]:
    """The free resources of each live node of the connected cluster, by node id (hex)."""
    from ray._private.state import available_resources_per_node

    return available_resources_per_node()


def head_node_id() -> str:
    """The head node's id, or the driver's node where no live node says it is the head."""
    import ray
    from ray._common.constants import HEAD_NODE_RESOURCE_NAME

    for node in ray.nodes():
        if node.get("Alive") and HEAD_NODE_RESOURCE_NAME in node.get("Resources", {}):
            return str(node["NodeID"])
    return str(ray.get_runtime_context().get_node_id())


# -------------------------------------------------------------------------------------------------
# The Optuna study and HyperOpt trials behind Tune's searchers, for warm-start trials.
# -------------------------------------------------------------------------------------------------

_SEARCHER_USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        "ray.tune.search.optuna",
        "OptunaSearch._ot_study",
        None,
        "the Optuna study, to add a warm-start trial; `add_evaluated_point` refuses "
        "define-by-run spaces, and the searcher exposes no study",
    ),
    PrivateUse(
        "ray.tune.search.hyperopt",
        "HyperOptSearch._hpopt_trials",
        None,
        "HyperOpt's trials, to add a warm-start trial; the searcher has no public way to add one",
    ),
)


def optuna_study(searcher: Any) -> Any:
    """The `optuna.Study` behind a Tune `OptunaSearch` (None before its space is set)."""
    return searcher._ot_study


def hyperopt_trials(searcher: Any) -> Any:
    """The `hyperopt.Trials` behind a Tune `HyperOptSearch`."""
    return searcher._hpopt_trials


# -------------------------------------------------------------------------------------------------
# MLflow beyond its documented API: the store behind a client, name rules, REST requests.
# MLflow documents `mlflow`, `mlflow.client`, `mlflow.entities` and the REST API. The tracking
# writer and the bulk reads also need the store object behind a client, MLflow's own name
# validation, its artifact URI joining and its authenticated REST requests, which live in
# `mlflow.tracking` and `mlflow.utils`; each is a row here.
# -------------------------------------------------------------------------------------------------

_MLFLOW_USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        "mlflow.tracking",
        "_get_store",
        ("store_uri",),
        "the store object behind `MlflowClient(uri)` (the same cached instance), for "
        "`SqlAlchemyStore.get_metric_history_bulk`; the client reads one run's history per call "
        "and has no public accessor for its store (the name is in `mlflow.tracking.__all__`)",
    ),
    PrivateUse(
        "mlflow.utils.validation",
        "validate_param_and_metric_name",
        ("name",),
        "the bulk writer sends a name through MLflow's client when MLflow's validation would "
        "reject it (so that MLflow reports it); the rule has no public function",
    ),
    PrivateUse(
        "mlflow.utils.validation",
        "path_not_unique",
        ("name",),
        "the other half of MLflow's name rule (no '..' or absolute paths)",
    ),
    PrivateUse(
        "mlflow.utils.uri",
        "append_to_uri_path",
        ("uri",),
        "a bulk-written run's artifact URI, joined as `SqlAlchemyStore.create_run` joins it",
    ),
    PrivateUse(
        "mlflow.utils.credentials",
        "get_default_host_creds",
        ("store_uri",),
        "the token, user and password MLflow's REST store sends, for the bulk history endpoint "
        "that `MlflowClient` does not call",
    ),
    PrivateUse(
        "mlflow.utils.rest_utils",
        "http_request",
        ("host_creds", "endpoint", "method"),
        "a GET of `/ajax-api/2.0/mlflow/metrics/get-history-bulk` with MLflow's retries and "
        "headers; no client method reads many runs' histories at once",
    ),
    PrivateUse(
        "mlflow.utils.rest_utils",
        "verify_rest_response",
        ("response", "endpoint"),
        "turns that request's error answer into MLflow's exception, as the REST store does",
    ),
)


def tracking_store(uri: str) -> Any:
    """The store object behind ``MlflowClient(uri)`` (MLflow's cached instance, no new engine)."""
    from mlflow.tracking import _get_store

    return _get_store(store_uri=uri)


def mlflow_accepts_name(name: str) -> bool:
    """Whether MLflow's validation accepts `name` as a metric, param or tag key (length aside)."""
    from mlflow.utils.validation import path_not_unique, validate_param_and_metric_name

    return bool(validate_param_and_metric_name(name)) and not path_not_unique(name)


def run_artifact_uri(artifact_location: str, run_id: str) -> str:
    """The artifact URI MLflow's SQL store gives a new run of an experiment at that location."""
    from mlflow.utils.uri import append_to_uri_path

    return str(append_to_uri_path(artifact_location, run_id, "artifacts"))


def rest_get(uri: str, endpoint: str, params: dict[str, Any]) -> Any:
    """The JSON answer of a GET of `endpoint` on the tracking server `uri`, as MLflow sends it.

    Raises:
        mlflow.exceptions.MlflowException: The server answered with an error.
    """
    from mlflow.utils.credentials import get_default_host_creds
    from mlflow.utils.rest_utils import http_request, verify_rest_response

    # The credentials and headers MLflow's own REST store sends (token, user and password).
    response = http_request(get_default_host_creds(uri), endpoint, "GET", params=params)
    return verify_rest_response(response, endpoint).json()


# MLflow's SQL schema. MLflow documents its REST API and its client, not the tables behind a SQL
# store, which sweeplab writes in bulk (`tracking/_bulk.py`) and trims in a new store's template
# (`tracking/_new_store.py`). Every statement on them is here; each table and column it names
# is a row of `MLFLOW_SCHEMA_USES`, which a test checks against a store MLflow has just created.


@dataclasses.dataclass(frozen=True)
class SchemaUse:
    """One table of MLflow's SQL store that sweeplab reads or writes, and its columns."""

    table: str
    columns: tuple[str, ...]
    why: str


MLFLOW_SCHEMA_USES: tuple[SchemaUse, ...] = (
    SchemaUse(
        "runs",
        (
            "run_uuid",
            "name",
            "source_type",
            "source_name",
            "entry_point_name",
            "user_id",
            "status",
            "start_time",
            "end_time",
            "deleted_time",
            "source_version",
            "lifecycle_stage",
            "artifact_uri",
            "experiment_id",
        ),
        "a trial's child run, created, renamed and ended many at a time (MLflow's client "
        "creates one run per call), and a sweep's child runs read in one query each",
    ),
    SchemaUse("tags", ("key", "value", "run_uuid"), "child runs' tags, set many runs at once"),
    SchemaUse("params", ("key", "value", "run_uuid"), "child runs' parameters, in bulk"),
    SchemaUse(
        "metrics",
        ("key", "value", "timestamp", "step", "is_nan", "run_uuid"),
        "child runs' metric history, in bulk",
    ),
    SchemaUse(
        "latest_metrics",
        ("key", "value", "timestamp", "step", "is_nan", "run_uuid"),
        "each metric's latest point, which MLflow keeps beside the history",
    ),
    SchemaUse(
        "experiments",
        ("experiment_id", "name"),
        "the `Default` experiment, dropped from a new store's template (MLflow adds it back "
        "with the copy's own artifact location), and an experiment found by name",
    ),
    SchemaUse("experiment_tags", ("experiment_id",), "the `Default` experiment's tags, dropped"),
)


# The Alembic revisions of MLflow's schema (``alembic_version.version_num``) on which every row
# of MLFLOW_SCHEMA_USES was checked by tests/raycompat/test_mlflow_schema.py: MLflow 3.17's head.
# A store at another revision is checked column by column before sweeplab writes to it.
MLFLOW_SCHEMA_REVISIONS: frozenset[str] = frozenset({"dc11669786a5"})


def mlflow_schema_mismatch(connection: Any) -> str | None:
    """Why sweeplab's statements (`MlflowSql`) do not fit the schema of the store that a
    SQLAlchemy `connection` reads, in a few words; None where they do.

    A revision of `MLFLOW_SCHEMA_REVISIONS` fits. Another fits where every table and column of
    `MLFLOW_SCHEMA_USES` is there (the columns sweeplab writes have been in MLflow's schema
    since 2.x; a newer MLflow that renames one is refused, never written to).
    """
    from sqlalchemy import inspect, text

    try:
        revision = connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except Exception as error:
        return f"it has no MLflow schema revision ({type(error).__name__})"
    if revision in MLFLOW_SCHEMA_REVISIONS:
        return None
    inspector = inspect(connection)
    missing = []
    for use in MLFLOW_SCHEMA_USES:
        try:
            present = {column["name"] for column in inspector.get_columns(use.table)}
        except Exception:
            present = set()
        missing += [f"{use.table}.{name}" for name in use.columns if name not in present]
    if missing:
        return f"its MLflow schema (revision {revision}) lacks {', '.join(missing[:5])}"
    return None


# The sweep's child runs: active runs of the parent's experiment tagged with the parent's id.
_SWEEP_CHILDREN = (
    "SELECT r.run_uuid FROM runs AS r JOIN tags AS p ON p.run_uuid = r.run_uuid"
    " WHERE r.experiment_id = :experiment AND r.lifecycle_stage = 'active'"
    " AND p.key = :parent_key AND p.value = :parent"
)


class MlflowSql:
    """The statements sweeplab runs on MLflow's tables, with SQLAlchemy's ``:name`` parameters."""

    # A run's row as MLflow's create_run writes it (source type UNKNOWN, empty source fields).
    INSERT_RUN = (
        "INSERT INTO runs (run_uuid, name, source_type, source_name, entry_point_name,"
        " user_id, status, start_time, end_time, deleted_time, source_version, lifecycle_stage,"
        " artifact_uri, experiment_id) VALUES (:run_uuid, :name, 'UNKNOWN', '', '', :user_id,"
        " :status, :start_time, :end_time, NULL, '', 'active', :artifact_uri, :experiment_id)"
    )
    INSERT_TAG = "INSERT INTO tags (key, value, run_uuid) VALUES (:key, :value, :run_uuid)"
    DELETE_TAG = "DELETE FROM tags WHERE run_uuid = :run_uuid AND key = :key"
    INSERT_PARAM = "INSERT INTO params (key, value, run_uuid) VALUES (:key, :value, :run_uuid)"
    INSERT_METRIC = (
        "INSERT INTO metrics (key, value, timestamp, step, is_nan, run_uuid)"
        " VALUES (:key, :value, :timestamp, :step, :is_nan, :run_uuid)"
    )
    INSERT_LATEST = (
        "INSERT INTO latest_metrics (key, value, timestamp, step, is_nan, run_uuid)"
        " VALUES (:key, :value, :timestamp, :step, :is_nan, :run_uuid)"
    )
    DELETE_LATEST = "DELETE FROM latest_metrics WHERE run_uuid = :run_uuid AND key = :key"
    SET_NAME = "UPDATE runs SET name = :name WHERE run_uuid = :run_uuid"
    SET_STATUS = "UPDATE runs SET status = :status, end_time = :end_time WHERE run_uuid = :run_uuid"
    RUN_EXPERIMENT = "SELECT experiment_id FROM runs WHERE run_uuid = :run_id"
    # Completed by an expanding ``:values`` parameter.
    LATEST_IN = "SELECT run_uuid, key, step, timestamp, value FROM latest_metrics WHERE run_uuid IN"
    RUNS_IN = "SELECT run_uuid FROM runs WHERE run_uuid IN"
    ACTIVE_RUNS_IN = "SELECT run_uuid FROM runs WHERE lifecycle_stage = 'active' AND run_uuid IN"
    # A sweep's child runs and their tags, parameters and latest metrics (``:experiment``,
    # ``:parent_key``, ``:parent``), the runs newest first as ``search_runs`` returns them.
    CHILD_RUNS = (
        "SELECT run_uuid, name, experiment_id, user_id, status, start_time, end_time,"
        f" lifecycle_stage, artifact_uri FROM runs WHERE run_uuid IN ({_SWEEP_CHILDREN})"
        " ORDER BY start_time DESC, run_uuid"
    )
    CHILD_TAGS = f"SELECT run_uuid, key, value FROM tags WHERE run_uuid IN ({_SWEEP_CHILDREN})"
    CHILD_PARAMS = f"SELECT run_uuid, key, value FROM params WHERE run_uuid IN ({_SWEEP_CHILDREN})"
    CHILD_METRICS = (
        "SELECT run_uuid, key, value, timestamp, step, is_nan FROM latest_metrics"
        f" WHERE run_uuid IN ({_SWEEP_CHILDREN})"
    )
    # For sqlite3: the latest sweep of an experiment, its best-trial tag (role key, role value,
    # best key, experiment name).
    LATEST_SWEEP_BEST = """
SELECT best.value
FROM runs AS r
JOIN experiments AS e ON e.experiment_id = r.experiment_id
JOIN tags AS role ON role.run_uuid = r.run_uuid AND role.key = ? AND role.value = ?
LEFT JOIN tags AS best ON best.run_uuid = r.run_uuid AND best.key = ?
WHERE e.name = ? AND r.lifecycle_stage = 'active'
ORDER BY r.start_time DESC, r.run_uuid
LIMIT 1
"""
    # For sqlite3, no parameters: a new store's template without MLflow's `Default` experiment.
    DROP_DEFAULT_EXPERIMENT = (
        "DELETE FROM experiment_tags WHERE experiment_id = 0",
        "DELETE FROM experiments WHERE experiment_id = 0",
    )


# -------------------------------------------------------------------------------------------------
# The C library, through ctypes: Linux functions that no Python module wraps.
# -------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LibcUse:
    """One C library function sweeplab calls through ``ctypes``, and why."""

    function: str
    why: str


LIBC_USES: tuple[LibcUse, ...] = (
    LibcUse(
        "malloc_trim",
        "gives the freed pages of the driver's heap back to the system while a sweep runs "
        "(`engine/_heap.py`); glibc keeps them in its arenas, and Python has no call for it",
    ),
    LibcUse(
        "prctl",
        "makes the report server's guard a child subreaper (`PR_SET_CHILD_SUBREAPER`), so it "
        "reaps the server's orphaned workers (`report/_ui_guard.py`); the `os` module has no prctl",
    ),
)


def libc_function(name: str) -> Callable[..., Any] | None:
    """The C library's function `name` (a row of :data:`LIBC_USES`), or None off Linux or
    where the C library lacks it (musl has no ``malloc_trim``)."""
    if name not in {use.function for use in LIBC_USES}:
        raise ValueError(f"{name} is not a row of LIBC_USES")
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        function: Callable[..., Any] = getattr(ctypes.CDLL(None, use_errno=True), name)
    except (OSError, AttributeError):
        return None
    return function


PRIVATE_USES: tuple[PrivateUse, ...] = (
    *_TRAIN_USES,
    *_LOADER_USES,
    *_TUNE_USES,
    *_CLUSTER_USES,
    *_SEARCHER_USES,
    *_MLFLOW_USES,
)


def __getattr__(name: str) -> Any:
    # `DistributedTrainFnUtils` imported from Ray on first use, so that importing this stays free.
    if name == "DistributedTrainFnUtils":
        from ray.train.v2._internal.execution.train_fn_utils import DistributedTrainFnUtils

        return DistributedTrainFnUtils
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
