"""The Tune trial: a light driver that runs one Ray Train trainer group.

Ray's recommended pattern is a Tune function trainable that builds a ``TorchTrainer`` and calls
``fit()`` with ``TuneReportCallback``. That callback forwards rank 0's metrics only and no
checkpoint, so PBT's exploit and a resumed sweep have nothing to restart from. The driver here
instead receives every report through its own queue, aggregates the workers' metrics when asked,
and reports the Train checkpoint to Tune as the trial's checkpoint. Tune persists its own copy,
so the checkpoint a recipient of PBT's exploit (or a resumed trial) restarts from survives the
donor's clean-up of its Train checkpoints.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import math
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeplab.engine._trial_mode import TrialMode
from sweeplab.keys import CHECKPOINT_PATH_KEY, GROUP_RESTARTS_KEY, WORKERS_KEY

if TYPE_CHECKING:
    from sweeplab.engine._resolved import ResolvedSweep

__all__ = ["DRIVER_RESOURCES", "TrialSettings", "make_trainable", "run_trial"]

# What the driver of a trainer group reserves: no CPU (it only waits on its group), but Ray
# refuses an empty request, so a token amount of memory.
DRIVER_RESOURCES: Mapping[str, float] = {"cpu": 0, "memory": 1 << 20}

# Sent through the queue when `fit()` returns or raises.
_DONE = "__sweeplab_done__"
# Sent once by the Train controller: its own actor handle.
_CONTROLLER = "__sweeplab_controller__"
# Controllers of the trainer groups running in this trial actor, aborted when Tune stops it.
_RUNNING_CONTROLLERS: list[Any] = []


@dataclasses.dataclass(frozen=True)
class TrialSettings:
    """Everything a trial driver needs besides its sampled config."""

    train_func: Callable[..., Any]
    decode: Callable[[dict[str, Any]], dict[str, Any]]
    metric: str
    mode: str
    num_workers: int | tuple[int, int]
    use_gpu: bool
    resources_per_worker: Mapping[str, float]
    placement_strategy: str
    checkpoints_to_keep: int
    max_failures: int
    metrics_from: str
    train_storage: str
    trial_mode: TrialMode
    # The actor names of the sweep's warm trial slots (mode WARM_SLOT).
    slots: tuple[str, ...] = ()

    @classmethod
    def of(cls, resolved: ResolvedSweep, *, slots: tuple[str, ...] = ()) -> TrialSettings:
        """The per-trial view of a resolved sweep: small, and pickled into every trial actor."""
        return cls(
            train_func=resolved.sweep.train_func,
            decode=resolved.config_decoder(),
            metric=resolved.metric,
            mode=resolved.mode,
            num_workers=resolved.workers_per_trial,
            use_gpu=resolved.use_gpu,
            resources_per_worker=resolved.worker_resources,
            placement_strategy=resolved.placement_strategy,
            checkpoints_to_keep=resolved.checkpoints_to_keep,
            max_failures=resolved.max_failures,
            metrics_from=resolved.metrics_from,
            train_storage=resolved.train_storage,
            trial_mode=resolved.trial_mode,
            slots=slots,
        )

    @property
    def trial_resources(self) -> dict[str, float]:
        """What Tune reserves for the trial actor itself."""
        if self.trial_mode is not TrialMode.IN_PROCESS:
            return dict(DRIVER_RESOURCES)
        names = {"CPU": "cpu", "GPU": "gpu"}
        return {names.get(k, k): v for k, v in self.resources_per_worker.items()} or dict(
            DRIVER_RESOURCES
        )


def _aggregate(worker_metrics: list[dict[str, Any]], metrics_from: str) -> dict[str, Any]:
    """Rank 0's metrics, or the mean of each numeric metric over the workers."""
    first = dict(worker_metrics[0])
    if metrics_from != "mean" or len(worker_metrics) == 1:
        return first
    for key, value in first.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        values = [m.get(key) for m in worker_metrics]
        numbers = [
            float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)
        ]
        if len(numbers) == len(values):
            first[key] = math.fsum(numbers) / len(numbers)
    return first


def _make_report_callback(queue: Any, metrics_from: str) -> Any:
    from ray.train import UserCallback

    class _QueueReportCallback(UserCallback):
        """Runs in the Train controller: hands each report to the trial driver at once."""

        def __init__(self) -> None:
            self._sent_handle = False
            self._group_restarts = 0

        def after_exception(self, run_context: Any, worker_exceptions: dict[int, Any]) -> None:
            # Train restarts the group from its latest checkpoint (up to max_failures); Tune
            # never sees it, so the count travels with the next report.
            self._group_restarts += 1

        def after_report(
            self, run_context: Any, metrics: list[dict[str, Any]], checkpoint: Any
        ) -> None:
            import ray

            if not self._sent_handle:
                # The trial driver aborts this controller when Tune stops the trial.
                queue.put((_CONTROLLER, ray.get_runtime_context().current_actor))
                self._sent_handle = True
            aggregated = _aggregate(metrics, metrics_from)
            aggregated[WORKERS_KEY] = len(metrics)
            aggregated[GROUP_RESTARTS_KEY] = self._group_restarts
            queue.put((aggregated, checkpoint.path if checkpoint else None))

    return _QueueReportCallback()


class StartFromCheckpoint:
    """A worker function whose `ray.train.get_checkpoint()` starts at a given checkpoint.

    Train V2 dropped `TorchTrainer(resume_from_checkpoint=...)` (it raises a
    DeprecationWarning). A restarted trial (PBT exploit, retry, resumed sweep) must still see the
    checkpoint it restarts from, so each worker puts it into its Train context before the user's
    function runs, unless Train already has a checkpoint of this run (a restarted group).
    """

    def __init__(self, train_func: Callable[..., Any], checkpoint_path: str) -> None:
        self.train_func = train_func
        self.checkpoint_path = checkpoint_path
        self.takes_config = bool(inspect.signature(train_func).parameters)

    def __call__(self, config: dict[str, Any]) -> Any:
        from sweeplab.raycompat import start_worker_from_checkpoint

        start_worker_from_checkpoint(self.checkpoint_path)
        return self.train_func(config) if self.takes_config else self.train_func()


def _attempt_name(train_storage: str, trial_id: str) -> str:
    """A fresh Train run name for each start of the trial.

    A restarted trial (PBT exploit, retry, resumed sweep) starts from the checkpoint Tune hands
    it; reusing the previous run's name would make Train restore that run's own latest
    checkpoint instead.
    """
    base = Path(train_storage)
    attempt = 0
    while (base / f"{trial_id}_{attempt}").exists():
        attempt += 1
    return f"{trial_id}_{attempt}"


def run_trial(config: dict[str, Any], settings: TrialSettings) -> None:
    """The Tune function trainable of one trial."""
    import ray
    import ray.train
    import ray.tune
    from ray.util.queue import Queue

    from sweeplab.raycompat import lean_torch_trainer

    trial_id = ray.tune.get_context().get_trial_id()
    user_config = settings.decode(config)
    if settings.trial_mode is TrialMode.WARM_SLOT:
        from sweeplab.engine.slots import run_in_slot

        run_in_slot(
            slots=settings.slots,
            trial_id=trial_id,
            config=user_config,
            folder=Path(settings.train_storage, _attempt_name(settings.train_storage, trial_id)),
            metric=settings.metric,
            mode=settings.mode,
            checkpoints_to_keep=settings.checkpoints_to_keep,
            metrics_from=settings.metrics_from,
            max_failures=settings.max_failures,
        )
        return
    if settings.trial_mode is TrialMode.IN_PROCESS:
        from sweeplab.engine._local import run_in_trial

        name = _attempt_name(settings.train_storage, trial_id)
        run_in_trial(
            settings.train_func,
            user_config,
            run_folder=Path(settings.train_storage, name),
            metric=settings.metric,
            mode=settings.mode,
            checkpoints_to_keep=settings.checkpoints_to_keep,
        )
        return
    from sweeplab.engine._datawait import MeasureDataWait

    restored = ray.tune.get_checkpoint()
    train_func: Any = MeasureDataWait(settings.train_func)
    if restored is not None:
        train_func = StartFromCheckpoint(train_func, restored.path)

    queue = Queue(actor_options={"num_cpus": 0})
    name = _attempt_name(settings.train_storage, trial_id)
    Path(settings.train_storage, name).mkdir(parents=True, exist_ok=True)
    trainer = lean_torch_trainer()(
        train_func,
        train_loop_config=user_config,
        scaling_config=ray.train.ScalingConfig(
            num_workers=settings.num_workers,
            use_gpu=settings.use_gpu,
            resources_per_worker=dict(settings.resources_per_worker),
            placement_strategy=settings.placement_strategy,
        ),
        run_config=ray.train.RunConfig(
            name=name,
            storage_path=settings.train_storage,
            checkpoint_config=ray.train.CheckpointConfig(
                num_to_keep=settings.checkpoints_to_keep,
                checkpoint_score_attribute=settings.metric,
                checkpoint_score_order=settings.mode,
            ),
            failure_config=ray.train.FailureConfig(max_failures=settings.max_failures),
            callbacks=[_make_report_callback(queue, settings.metrics_from)],
        ),
    )

    outcome: dict[str, BaseException] = {}

    def fit() -> None:
        try:
            trainer.fit()
        except BaseException as exc:
            outcome["error"] = exc
        finally:
            queue.put((_DONE, None))

    thread = threading.Thread(target=fit, name=f"sweeplab-fit-{trial_id}", daemon=True)
    thread.start()
    while True:
        metrics, checkpoint_path = queue.get()
        if metrics == _DONE:
            break
        if metrics == _CONTROLLER:
            _RUNNING_CONTROLLERS.append(checkpoint_path)
            continue
        if checkpoint_path is not None:
            metrics[CHECKPOINT_PATH_KEY] = checkpoint_path
            ray.tune.report(metrics, checkpoint=ray.tune.Checkpoint(checkpoint_path))
        else:
            ray.tune.report(metrics)
    thread.join()
    _RUNNING_CONTROLLERS.clear()
    if "error" in outcome:
        raise outcome["error"]


def abort_running_groups(timeout_s: float = 10.0) -> None:
    """Abort the trainer groups this trial actor started, releasing their workers at once.

    Without this a trial stopped early by a scheduler leaves its Train controller retrying the
    group until Train's placement-group cleaner notices, holding the CPUs the next trial needs.
    """
    import ray

    from sweeplab.raycompat import abort_train_controller

    refs = []
    while _RUNNING_CONTROLLERS:
        controller = _RUNNING_CONTROLLERS.pop()
        with contextlib.suppress(Exception):
            refs.append(abort_train_controller(controller))
    if refs:
        with contextlib.suppress(Exception):
            ray.wait(refs, num_returns=len(refs), timeout=timeout_s)


def make_trainable(settings: TrialSettings) -> Any:
    """The Tune trainable class of a sweep: `run_trial` that aborts its group when stopped."""
    import ray.tune

    from sweeplab.raycompat import function_trainable_class

    base = function_trainable_class(ray.tune.with_parameters(run_trial, settings=settings))

    class SweeplabTrial(base):  # type: ignore[misc, valid-type]
        def cleanup(self) -> None:
            from sweeplab.engine.slots import stop_current_run

            stop_current_run()
            abort_running_groups()
            super().cleanup()

    return ray.tune.with_resources(SweeplabTrial, settings.trial_resources)
