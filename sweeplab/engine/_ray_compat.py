"""The one module that touches Ray's private APIs.

Every use of a Ray private (a leading underscore, ``_internal``, ``_private``, generated protos)
in sweeplab goes through a small function here, named for what it does. :data:`PRIVATE_USES`
lists each symbol, where sweeplab uses it and why no public API serves; the fast test
``tests/engine/test_ray_compat.py`` checks every row against the installed Ray, so a Ray upgrade
that moves one fails that test instead of a sweep. ``docs/upgrading-ray.md`` says how to proceed.

Ray is imported inside the functions: importing this module costs nothing.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import re
import time
from collections.abc import Callable
from typing import Any

__all__ = [
    "PRIVATE_USES",
    "DistributedTrainFnUtils",
    "LocalTrainFnUtils",
    "PlacementGroupRecord",
    "PrivateUse",
    "abort_train_controller",
    "check_private_use",
    "current_train_context",
    "current_train_fn_utils",
    "disable_tune_session_guard",
    "free_resources_by_node",
    "hook_prepared_loaders",
    "hyperopt_trials",
    "install_train_fn_utils",
    "observe_pbt_exploits",
    "optuna_study",
    "pbt_last_train_time",
    "placement_group_records",
    "set_trial_latest_checkpoint",
    "set_worker_start_checkpoint",
    "trial_latest_checkpoint",
    "wrap_train_report",
]


@dataclasses.dataclass(frozen=True)
class PrivateUse:
    """One Ray private that sweeplab relies on.

    Attributes:
        module: The module it lives in.
        name: A dotted path inside `module` (``"Class.method"``).
        used_by: The sweeplab modules that use it (through this module).
        why: What it is for, and why no public API serves.
        params: Parameter names sweeplab passes (or, for a class, passes to its constructor).
        members: Attributes sweeplab reads or writes on it: class attributes, attributes that
            its source assigns to ``self``, or fields of a protobuf message.
    """

    module: str
    name: str
    used_by: str
    why: str
    params: tuple[str, ...] = ()
    members: tuple[str, ...] = ()


_CONTEXT = "ray.train.v2._internal.execution.context"
_FN_UTILS = "ray.train.v2._internal.execution.train_fn_utils"

PRIVATE_USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        _CONTEXT,
        "get_train_context",
        "_driver, _slots",
        "The worker's Train context; `ray.train.get_checkpoint()` returns its `checkpoint`. "
        "Train V2 refuses `resume_from_checkpoint` and has no public setter.",
    ),
    PrivateUse(
        _CONTEXT,
        "TrainContext",
        "_driver",
        "The field a restarted trial's workers start from, written before `train_func` runs.",
        members=("checkpoint",),
    ),
    PrivateUse(
        _FN_UTILS,
        "get_train_fn_utils",
        "_datawait, _slots",
        "The per-worker object behind `ray.train.report`; no public hook sees a report in the "
        "worker (a `UserCallback` runs in the controller, after the fact).",
    ),
    PrivateUse(
        _FN_UTILS,
        "set_train_fn_utils",
        "_local, _slots",
        "Installs the object behind `ray.train.*` where Train did not: a one-worker trial in "
        "its Tune actor, a slot's current assignment.",
        params=("train_fn_utils",),
    ),
    PrivateUse(
        _FN_UTILS,
        "TrainFnUtils",
        "_local, _datawait, _slots",
        "The interface sweeplab's replacements implement and wrap (`report`, "
        "`get_checkpoint`).",
        members=("report", "get_checkpoint", "get_context"),
    ),
    PrivateUse(
        _FN_UTILS,
        "TrainFnUtils.report",
        "_local, _datawait, _slots",
        "`ray.train.report(metrics, checkpoint=...)` lands here with these arguments.",
        params=("metrics", "checkpoint"),
    ),
    PrivateUse(
        _FN_UTILS,
        "LocalTrainFnUtils",
        "_local",
        "Train's local-mode utilities (context, `prepare_model`, `prepare_data_loader`), "
        "reused by a one-worker trial with `report` routed to Tune.",
        params=("experiment_name",),
        members=("report", "get_checkpoint"),
    ),
    PrivateUse(
        _FN_UTILS,
        "DistributedTrainFnUtils",
        "_slots",
        "What Train installs in its workers; a slot wraps it for each assignment.",
    ),
    PrivateUse(
        "ray.tune.trainable.trainable_fn_utils",
        "_in_tune_session",
        "_local",
        "The guard by which `ray.train.*` refuse to run inside a Tune trial (ray#49454); a "
        "one-worker trial routes those calls to Tune itself. No switch turns it off.",
    ),
    PrivateUse(
        "ray.train.torch.train_loop_utils",
        "_WrappedDataLoader",
        "_datawait",
        "The loader `prepare_data_loader` returns; timing its synchronous batch fetch measures "
        "the data wait. Torch's and Train's public APIs expose no per-batch hook.",
        members=("__iter__", "_prefetch_next_batch", "next_batch"),
    ),
    PrivateUse(
        "ray.train.v2._internal.execution.controller.controller",
        "TrainController.abort",
        "_driver",
        "Ends a trainer group at once (workers, placement group) when Tune stops its trial; "
        "`TorchTrainer.fit()` has no public way to stop it from another thread.",
    ),
    PrivateUse(
        "ray.tune.schedulers.pbt",
        "PopulationBasedTraining._exploit",
        "_pbt",
        "The only place PBT acts on an exploit; no callback tells of one (`log_config` only "
        "writes files).",
        params=("tune_controller", "trial", "trial_to_clone"),
    ),
    PrivateUse(
        "ray.tune.schedulers.pbt",
        "PopulationBasedTraining",
        "_pbt",
        "PBT's per-trial state: the iteration an exploited trial goes on from.",
        members=("_trial_state",),
    ),
    PrivateUse(
        "ray.tune.schedulers.pbt",
        "_PBTTrialState",
        "_pbt",
        "The iteration an exploited trial goes on from (PBT copies the donor's).",
        members=("last_train_time",),
    ),
    PrivateUse(
        "ray.train._internal.checkpoint_manager",
        "_CheckpointManager",
        "_pbt",
        "The checkpoint a paused trial restarts from, repointed at a copy of the donor's (which "
        "the donor may delete first). `Trial.on_checkpoint` would register, rank and count a "
        "new checkpoint instead.",
        members=("latest_checkpoint_result", "_latest_checkpoint_result"),
    ),
    PrivateUse(
        "ray.train._internal.session",
        "_TrainingResult",
        "_pbt",
        "The (checkpoint, metrics) record the checkpoint manager holds.",
        params=("checkpoint", "metrics"),
        members=("checkpoint", "metrics"),
    ),
    PrivateUse(
        "ray._private.state",
        "state._connect_and_get_accessor",
        "_orphans",
        "The GCS placement-group table with each group's creating actor and whether it died; "
        "`ray.util.placement_group_table()` and `ray.util.state` omit the creator.",
    ),
    PrivateUse(
        "ray._raylet",
        "GlobalStateAccessor.get_placement_group_table",
        "_orphans",
        "Reads the raw placement-group table (serialized `PlacementGroupTableData`).",
    ),
    PrivateUse(
        "ray.core.generated.gcs_pb2",
        "PlacementGroupTableData",
        "_orphans",
        "Parses one placement group of that table.",
        members=(
            "placement_group_id",
            "creator_actor_id",
            "creator_actor_dead",
            "is_detached",
            "state",
            "REMOVED",
        ),
    ),
    PrivateUse(
        "ray._private.state",
        "available_resources_per_node",
        "status",
        "Free resources per node (a DeveloperAPI under `_private`); `ray.available_resources()` "
        "sums the cluster, `ray.nodes()` and `ray.util.state.list_nodes()` give totals only.",
    ),
    PrivateUse(
        "ray.tune.search.optuna",
        "OptunaSearch",
        "_warm_searcher",
        "The Optuna study, to add a warm trial to its history: `add_evaluated_point` refuses "
        "define-by-run spaces, and the in-memory study cannot be loaded by name.",
        members=("_ot_study",),
    ),
    PrivateUse(
        "ray.tune.search.hyperopt",
        "HyperOptSearch",
        "_warm_searcher",
        "The HyperOpt trials and domain, to add a warm trial to its history: "
        "`HyperOptSearch` has no `add_evaluated_point`.",
        members=("_hpopt_trials", "domain", "metric_op"),
    ),
)


def _resolve(use: PrivateUse) -> Any:
    obj: Any = importlib.import_module(use.module)
    for part in use.name.split("."):
        obj = getattr(obj, part)
    return obj


def _has_member(obj: Any, member: str) -> bool:
    if hasattr(obj, member):
        return True
    descriptor = getattr(obj, "DESCRIPTOR", None)
    if descriptor is not None and member in getattr(descriptor, "fields_by_name", {}):
        return True
    if not inspect.isclass(obj):
        return False
    # An attribute set on instances: some class in its hierarchy assigns `self.<member>`.
    assigned = re.compile(rf"\bself\.{re.escape(member)}\s*(:[^=\n]+)?=(?!=)")
    for cls in obj.__mro__:
        if cls is object:
            continue
        try:
            source = inspect.getsource(cls)
        except (OSError, TypeError):
            continue
        if assigned.search(source):
            return True
    return False


def check_private_use(use: PrivateUse) -> list[str]:
    """What no longer matches `use` in the installed Ray; empty when everything does."""
    where = f"{use.module}.{use.name} (used by {use.used_by})"
    try:
        obj = _resolve(use)
    except (ImportError, AttributeError) as exc:
        return [f"{where} is gone: {exc}"]
    problems = [
        f"{where} has no attribute {member!r}"
        for member in use.members
        if not _has_member(obj, member)
    ]
    if use.params:
        try:
            names = set(inspect.signature(obj).parameters)
        except (TypeError, ValueError) as exc:
            return [*problems, f"{where} has no readable signature: {exc}"]
        missing = [name for name in use.params if name not in names]
        if missing:
            problems.append(f"{where} lost parameter(s) {missing}; it has {sorted(names)}")
    return problems


# -- Train workers: context, the utilities behind ray.train.*, prepared loaders -------------


def current_train_context() -> Any:
    """The Train context of this worker (raises outside a Train worker)."""
    from ray.train.v2._internal.execution.context import get_train_context

    return get_train_context()


def set_worker_start_checkpoint(path: str) -> bool:
    """Makes `ray.train.get_checkpoint()` in this worker return `path`, unless Train has one.

    Returns:
        Whether the checkpoint was set (False: a restarted group has its run's own latest).
    """
    import ray.train

    context = current_train_context()
    if context.checkpoint is not None:
        return False
    context.checkpoint = ray.train.Checkpoint(path)
    return True


def current_train_fn_utils() -> Any:
    """The object behind `ray.train.report`, `get_checkpoint` and `get_context` here."""
    from ray.train.v2._internal.execution.train_fn_utils import get_train_fn_utils

    return get_train_fn_utils()


def install_train_fn_utils(utils: Any) -> None:
    """Routes this process's `ray.train.*` calls to `utils` (a `TrainFnUtils`)."""
    from ray.train.v2._internal.execution.train_fn_utils import set_train_fn_utils

    set_train_fn_utils(utils)


def wrap_train_report(wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Replaces this worker's `ray.train.report` target by `wrap(current target)`."""
    utils = current_train_fn_utils()
    utils.report = wrap(utils.report)


def disable_tune_session_guard() -> None:
    """Lets `ray.train.*` run in this process although it is a Tune trial (ray#49454).

    Only for a process whose `ray.train` calls are routed to Tune by sweeplab itself.
    """
    from ray.tune.trainable import trainable_fn_utils

    trainable_fn_utils._in_tune_session = lambda: False


def hook_prepared_loaders(
    *, on_iter: Callable[[], None], on_fetch: Callable[[float, bool], None]
) -> None:
    """Calls `on_iter()` when a prepared data loader starts an epoch, and after each batch
    fetch `on_fetch(seconds, exhausted)`. Patches the class: call it once per process.
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
        on_iter()
        return start(self)

    _WrappedDataLoader._prefetch_next_batch = _prefetch_next_batch
    _WrappedDataLoader.__iter__ = __iter__


_LAZY_CLASSES = {
    "LocalTrainFnUtils": _FN_UTILS,
    "DistributedTrainFnUtils": _FN_UTILS,
}


def __getattr__(name: str) -> Any:
    # Train's utility classes, imported on first use so that importing this module is free.
    if name in _LAZY_CLASSES:
        return getattr(importlib.import_module(_LAZY_CLASSES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- trial drivers and schedulers -------------------------------------------------------------


def abort_train_controller(controller: Any) -> Any:
    """Asks a Train controller actor to end its group now; returns the call's ObjectRef."""
    return controller.abort.remote()


def observe_pbt_exploits(cls: type) -> type:
    """Class decorator for a `PopulationBasedTraining` subclass: after each exploit, PBT calls
    `self.after_exploit(tune_controller, trial, donor)`.
    """
    exploit = cls._exploit  # type: ignore[attr-defined]

    @functools.wraps(exploit)
    def _exploit(self: Any, tune_controller: Any, trial: Any, trial_to_clone: Any) -> None:
        exploit(self, tune_controller, trial, trial_to_clone)
        self.after_exploit(tune_controller, trial, trial_to_clone)

    cls._exploit = _exploit  # type: ignore[attr-defined]
    return cls


def pbt_last_train_time(scheduler: Any, trial: Any) -> int:
    """The value of PBT's time attribute `trial` goes on from (after an exploit, the donor's)."""
    return int(scheduler._trial_state[trial].last_train_time)


def trial_latest_checkpoint(trial: Any) -> tuple[str, dict[str, Any]] | None:
    """The path and metrics of the checkpoint a Tune trial restarts from, if it has one."""
    latest = trial.run_metadata.checkpoint_manager.latest_checkpoint_result
    if latest is None or latest.checkpoint is None:
        return None
    return latest.checkpoint.path, latest.metrics


def set_trial_latest_checkpoint(trial: Any, path: str, metrics: dict[str, Any]) -> None:
    """Makes a Tune trial restart from the checkpoint at `path`, registering nothing new."""
    from ray.train._internal.session import _TrainingResult
    from ray.tune import Checkpoint

    manager = trial.run_metadata.checkpoint_manager
    manager._latest_checkpoint_result = _TrainingResult(
        checkpoint=Checkpoint(path), metrics=metrics
    )


# -- the cluster ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PlacementGroupRecord:
    """One placement group of the cluster, as the GCS records it."""

    placement_group_id: bytes
    is_detached: bool
    created_by_actor: bool  # False: created by a driver (Tune's own groups)
    creator_dead: bool
    removed: bool


def placement_group_records() -> list[PlacementGroupRecord]:
    """Every placement group of the connected cluster, with its creator."""
    import ray
    from ray._private.state import state
    from ray.core.generated import gcs_pb2

    records = []
    for raw in state._connect_and_get_accessor().get_placement_group_table():
        info = gcs_pb2.PlacementGroupTableData.FromString(raw)
        records.append(
            PlacementGroupRecord(
                placement_group_id=info.placement_group_id,
                is_detached=info.is_detached,
                created_by_actor=not ray.ActorID(info.creator_actor_id).is_nil(),
                creator_dead=info.creator_actor_dead,
                removed=info.state == gcs_pb2.PlacementGroupTableData.REMOVED,
            )
        )
    return records


def free_resources_by_node() -> dict[str, dict[str, float]]:
    """The free resources of each live node of the connected cluster, by node id (hex)."""
    from ray._private.state import available_resources_per_node

    return dict(available_resources_per_node())


# -- searchers -----------------------------------------------------------------------------------


def optuna_study(searcher: Any) -> Any:
    """The `optuna.Study` behind a Tune `OptunaSearch`."""
    return searcher._ot_study


def hyperopt_trials(searcher: Any) -> Any:
    """The `hyperopt.Trials` behind a Tune `HyperOptSearch`."""
    return searcher._hpopt_trials
