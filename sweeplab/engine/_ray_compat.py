"""The one module that touches Ray's private and internal APIs.

Everything sweeplab needs from Ray beyond its public API goes through the small functions here,
and every private symbol they use is a row of :data:`PRIVATE_USES` saying what it is for and why
no public API serves. ``tests/engine/test_ray_compat.py`` imports each row's symbol and checks
the parameters sweeplab passes, so a Ray upgrade that moves one fails that fast test, not a
sweep. ``docs/upgrading-ray.md`` lists the rows for people.

Ray is imported inside the functions: ``sweeplab status`` and ``preview`` must start fast.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ray.train.v2._internal.execution.train_fn_utils import DistributedTrainFnUtils

__all__ = [
    "PRIVATE_USES",
    "TUNE_DUPLICATE_RESULT_KEY",
    "DistributedTrainFnUtils",
    "PlacementGroupRecord",
    "PrivateUse",
    "abort_train_controller",
    "current_train_context",
    "current_train_fn_utils",
    "disable_tune_session_guard",
    "free_resources_per_node",
    "function_trainable_class",
    "head_node_id",
    "hyperopt_trials",
    "install_train_fn_utils",
    "keep_idle_trial_actors",
    "median_rule_stops_hard",
    "optuna_study",
    "pbt_exploit_iteration",
    "pbt_next_round",
    "pbt_with_exploit_hook",
    "placement_groups_with_creators",
    "prepared_data_loader",
    "replace_trial_restore_checkpoint",
    "route_train_calls_in_process",
    "start_worker_from_checkpoint",
    "time_prepared_loader_fetches",
    "transform_reported_metrics",
    "trial_restore_checkpoint",
]


@dataclasses.dataclass(frozen=True)
class PrivateUse:
    """One Ray symbol outside Ray's public API that sweeplab relies on.

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


_TRAIN_V2 = "ray.train.v2._internal.execution"

PRIVATE_USES: tuple[PrivateUse, ...] = (
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
        "ray.tune.trainable",
        "wrap_function",
        ("train_func",),
        "the function trainable's class (a DeveloperAPI), subclassed for a `cleanup` that "
        "aborts the group; a function trainable has no public stop hook",
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
        "ray.tune.trainable.trainable_fn_utils",
        "_in_tune_session",
        (),
        "the guard that refuses `ray.train.*` inside a Tune trial, turned off in the trial that "
        "routes them to Tune itself; no public switch",
    ),
    PrivateUse(
        "ray.train.torch.train_loop_utils",
        "_WrappedDataLoader._prefetch_next_batch",
        (),
        "the synchronous batch fetch of every prepared loader, timed for the data-wait metric; "
        "`prepare_data_loader` has no public hook",
    ),
    PrivateUse(
        "ray.train.torch.train_loop_utils",
        "_WrappedDataLoader.__iter__",
        (),
        "the start of an epoch, where the data-wait window opens",
    ),
    PrivateUse(
        "ray.train.torch.train_loop_utils",
        "_WrappedDataLoader.next_batch",
        None,
        "None once the epoch's data is exhausted: the data-wait window closes",
    ),
    PrivateUse(
        "ray.train.torch.train_loop_utils",
        "_WrappedDataLoader.__init__",
        ("base_dataloader", "device", "auto_transfer"),
        "builds the loader `prepare_data_loader` returns outside a Train worker, so a fast "
        "test can time its fetches; `prepare_data_loader` needs a Train session",
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
        "ray.tune.schedulers.pbt",
        "_PBTTrialState.last_train_time",
        None,
        "that iteration, in PBT's own time unit",
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
    PrivateUse(
        "ray.tune.result",
        "RESULT_DUPLICATE",
        None,
        "the key Tune adds to the result it repeats when a function trainable returns; it is "
        "no metric, and Tune's result keys have no public list (see `TUNE_DUPLICATE_RESULT_KEY`)",
    ),
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


# The key of `ray.tune.result.RESULT_DUPLICATE`, spelled out so that the tracker can leave it out
# of a trial's metrics without importing Ray (`tests/engine/test_ray_compat.py` checks the value).
TUNE_DUPLICATE_RESULT_KEY = "__duplicate__"


# --- Ray Train workers and trial drivers ---------------------------------------------------


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


def __getattr__(name: str) -> Any:
    # `DistributedTrainFnUtils` imported on first use, so that importing this module stays free.
    if name == "DistributedTrainFnUtils":
        from ray.train.v2._internal.execution.train_fn_utils import DistributedTrainFnUtils

        return DistributedTrainFnUtils
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def function_trainable_class(train_func: Callable[..., Any]) -> type:
    """The Tune trainable class Tune itself would make of the function `train_func`."""
    from ray.tune.trainable import wrap_function

    return wrap_function(train_func)


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


def time_prepared_loader_fetches(
    *, on_epoch_start: Callable[[], None], on_fetch: Callable[[float, bool], None]
) -> None:
    """Times the batch fetches of every loader `prepare_data_loader` returns (process-wide).

    Call once per process. `on_epoch_start()` runs when such a loader's iteration starts;
    `on_fetch(seconds, exhausted)` after each fetch, with `exhausted` True once the epoch's data
    is used up.
    """
    from ray.train.torch.train_loop_utils import _WrappedDataLoader

    fetch = _WrappedDataLoader._prefetch_next_batch
    start = _WrappedDataLoader.__iter__

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

    _WrappedDataLoader._prefetch_next_batch = _prefetch_next_batch
    _WrappedDataLoader.__iter__ = __iter__


def prepared_data_loader(loader: Any, device: Any) -> Any:
    """`loader` wrapped as `prepare_data_loader` wraps it on `device` (no transfer; for tests)."""
    from ray.train.torch.train_loop_utils import _WrappedDataLoader

    return _WrappedDataLoader(loader, device, auto_transfer=False)


# --- Schedulers ----------------------------------------------------------------------------


def median_rule_stops_hard(rule: Any) -> bool:
    """Whether a `MedianStoppingRule` stops the trials it rules out (False: it pauses them).

    A rule without the flag is taken to pause.
    """
    return getattr(rule, "_hard_stop", False) is True


# --- Population based training -------------------------------------------------------------


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


# --- Cluster state ------------------------------------------------------------------------


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


# --- Searchers ----------------------------------------------------------------------------


def optuna_study(searcher: Any) -> Any:
    """The `optuna.Study` behind a Tune `OptunaSearch` (None before its space is set)."""
    return searcher._ot_study


def hyperopt_trials(searcher: Any) -> Any:
    """The `hyperopt.Trials` behind a Tune `HyperOptSearch`."""
    return searcher._hpopt_trials
