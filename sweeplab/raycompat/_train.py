"""Ray Train V2 internals: a worker's context and the utilities behind `ray.train.*` calls.

A trial's Train workers start from a given checkpoint and report through wrapped utilities; a
one-worker trial runs the user's function in its own process with `ray.train.*` routed to Tune;
a stopped trial's Train controller is aborted.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from sweeplab.raycompat._ledger import PrivateUse

__all__ = [
    "USES",
    "abort_train_controller",
    "current_train_context",
    "current_train_fn_utils",
    "disable_tune_session_guard",
    "install_train_fn_utils",
    "lean_torch_trainer",
    "route_train_calls_in_process",
    "start_worker_from_checkpoint",
    "transform_reported_metrics",
]

_TRAIN_V2 = "ray.train.v2._internal.execution"

USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        f"{_TRAIN_V2}.context",
        "get_train_context",
        (),
        "a worker's Train context: Train V2 dropped `resume_from_checkpoint`, and no public "
        "API sets the checkpoint `ray.train.get_checkpoint()` returns",
        purpose="essential",
        feature="a restarted trial's workers start from its checkpoint",
    ),
    PrivateUse(
        f"{_TRAIN_V2}.context",
        "TrainContext.checkpoint",
        None,
        "written before the user's function runs, so a restarted trial starts from its checkpoint",
        purpose="essential",
        feature="a restarted trial's workers start from its checkpoint",
    ),
    PrivateUse(
        f"{_TRAIN_V2}.controller",
        "TrainController.abort",
        (),
        "releases a stopped trial's workers at once; `ray.kill` would leave its placement group "
        "to Train's cleaner, and the next trial would wait for the CPUs",
        purpose="speed",
        feature="a stopped trial's CPUs freed at once",
    ),
    PrivateUse(
        f"{_TRAIN_V2}.train_fn_utils",
        "LocalTrainFnUtils.__init__",
        ("experiment_name",),
        "Train's in-process utilities behind `ray.train.*`, subclassed so a one-worker trial's "
        "reports go to Tune; `num_workers=0` refuses to run inside a Tune trial (ray#49454)",
        purpose="essential",
        feature="one-worker trials in their Tune trial",
    ),
    PrivateUse(
        f"{_TRAIN_V2}.train_fn_utils",
        "LocalTrainFnUtils.report",
        ("metrics", "checkpoint"),
        "overridden: where `ray.train.report` lands in an in-process trial",
        purpose="essential",
        feature="one-worker trials in their Tune trial",
    ),
    PrivateUse(
        f"{_TRAIN_V2}.train_fn_utils",
        "LocalTrainFnUtils._last_checkpoint",
        None,
        "what `ray.train.get_checkpoint()` returns in process: the restored, then the latest one",
        purpose="essential",
        feature="one-worker trials in their Tune trial",
    ),
    PrivateUse(
        f"{_TRAIN_V2}.train_fn_utils",
        "LocalTrainFnUtils._last_metrics",
        None,
        "kept as Train's own `report` keeps it",
        purpose="essential",
        feature="one-worker trials in their Tune trial",
    ),
    PrivateUse(
        f"{_TRAIN_V2}.train_fn_utils",
        "set_train_fn_utils",
        ("train_fn_utils",),
        "installs the utilities behind `ray.train.*` in a one-worker trial's process and for "
        "each trial a warm slot runs; no public API selects them",
        purpose="essential",
        feature="one-worker trials in their Tune trial; warm trial slots",
    ),
    PrivateUse(
        f"{_TRAIN_V2}.train_fn_utils",
        "get_train_fn_utils",
        (),
        "the worker's utilities, whose `report` gains the data-wait metric and which a warm "
        "slot wraps; Train has no public hook on a worker's reports",
        purpose="essential",
        feature="the data-wait metric; warm trial slots",
    ),
    PrivateUse(
        f"{_TRAIN_V2}.train_fn_utils",
        "DistributedTrainFnUtils",
        None,
        "the utilities Train installs in its workers, which a warm slot wraps for each trial "
        "it runs; no public API routes a worker's `ray.train.*` calls",
        purpose="essential",
        feature="warm trial slots",
    ),
    PrivateUse(
        "ray.train.v2.api.data_parallel_trainer",
        "DataParallelTrainer._create_default_callbacks",
        (),
        "overridden to leave out the datasets callback of a trainer given no datasets: it "
        "starts a `DatasetManager` actor (a process importing Ray Data, about 2 s of CPU) at "
        "every group start; Train has no switch for it",
        purpose="speed",
        feature="no datasets actor per trainer group",
    ),
    PrivateUse(
        "ray.train.v2._internal.callbacks.datasets",
        "DatasetsCallback",
        None,
        "the callback left out; matched by class",
        purpose="speed",
        feature="no datasets actor per trainer group",
    ),
    PrivateUse(
        "ray.tune.trainable.trainable_fn_utils",
        "_in_tune_session",
        (),
        "the guard that refuses `ray.train.*` inside a Tune trial, turned off in the trial that "
        "routes them to Tune itself; no public switch",
        purpose="essential",
        feature="one-worker trials in their Tune trial",
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
