"""Ray Train V2 internals: a worker's context and the utilities behind `ray.train.*` calls.

A warm slot's Train workers report through wrapped utilities; a one-worker trial runs the user's
function in its slot's own process with `ray.train.*` routed to the slot.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from sweeplab.raycompat._ledger import PrivateUse

__all__ = [
    "USES",
    "current_train_fn_utils",
    "install_train_fn_utils",
    "lean_torch_trainer",
    "route_train_calls_in_process",
    "transform_reported_metrics",
]

_TRAIN_V2 = "ray.train.v2._internal.execution"

USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        f"{_TRAIN_V2}.train_fn_utils",
        "LocalTrainFnUtils.__init__",
        ("experiment_name",),
        "Train's in-process utilities behind `ray.train.*`, subclassed so a one-worker trial's "
        "reports go to its slot's host, which runs it in process; Train's public local mode "
        "(`num_workers=0`) runs a whole `fit()` per call and reports to no one (ray#49454)",
        purpose="essential",
        feature="one-worker trials in their slot's process",
    ),
    PrivateUse(
        f"{_TRAIN_V2}.train_fn_utils",
        "LocalTrainFnUtils.report",
        ("metrics", "checkpoint"),
        "overridden: where `ray.train.report` lands in an in-process trial",
        purpose="essential",
        feature="one-worker trials in their slot's process",
    ),
    PrivateUse(
        f"{_TRAIN_V2}.train_fn_utils",
        "LocalTrainFnUtils._last_checkpoint",
        None,
        "what `ray.train.get_checkpoint()` returns in process: the restored, then the latest one",
        purpose="essential",
        feature="one-worker trials in their slot's process",
    ),
    PrivateUse(
        f"{_TRAIN_V2}.train_fn_utils",
        "LocalTrainFnUtils._last_metrics",
        None,
        "kept as Train's own `report` keeps it",
        purpose="essential",
        feature="one-worker trials in their slot's process",
    ),
    PrivateUse(
        f"{_TRAIN_V2}.train_fn_utils",
        "set_train_fn_utils",
        ("train_fn_utils",),
        "installs the utilities behind `ray.train.*` in a one-worker trial's process and for "
        "each trial a warm slot runs; no public API selects them",
        purpose="essential",
        feature="one-worker trials in their slot's process; warm trial slots",
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
)


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


@functools.cache
def _routed_train_fn_utils() -> type:
    from ray.train.v2._internal.execution.train_fn_utils import LocalTrainFnUtils

    class RoutedTrainFnUtils(LocalTrainFnUtils):
        """Train's local-mode utilities whose `report` goes to the slot's reporter."""

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

    return RoutedTrainFnUtils


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
    utils_class = _routed_train_fn_utils()
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
