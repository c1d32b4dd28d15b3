"""An in-process slot: a one-worker trial runs in the host actor itself, with no trainer group.

A one-worker ``TorchTrainer`` group costs a Train controller and a worker process beside the
host for no parallelism; every report then crosses one process more. `InProcessHost` is a
`SlotHost` whose one "rank" is a thread of its own actor: it reserves the worker's resources
itself (one CPU by default), serves the user's ``ray.train.report``, ``get_checkpoint`` and
``get_context`` with Train's local-mode utilities, as a one-worker trial under Tune does
(`sweeplab.engine._local`), and speaks the same driver-side protocol (``claim``, ``submit``,
``next_event``, ``stop``), so the trial loop's `SlotBackend` drives it unchanged.
"""

from __future__ import annotations

import itertools
import shutil
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sweeplab.engine.slots._host import SlotHost
from sweeplab.engine.slots._pool import WaitHook, wait_until_ready
from sweeplab.engine.slots._protocol import LEAVE, Assignment
from sweeplab.engine.slots._worker import LeaveTrial, free_memory

__all__ = ["InProcessHost", "start_in_process_hosts"]

_RANK = 0
_WORKER = "in-process"


class InProcessHost(SlotHost):
    """A slot whose one worker is a thread of the host actor (see the module's docstring)."""

    def _serve(self, *, train_func: Any, name: str, **_: Any) -> None:
        # A Train worker has imported `ray.train.torch`, so a `train_func` may call
        # `ray.train.torch.prepare_model` having imported only `ray.train`.
        import ray.train.torch  # noqa: F401

        from sweeplab.engine._datawait import MeasureDataWait

        measured = MeasureDataWait(train_func)
        while True:
            assignment = self.next_assignment(_RANK, 1, _WORKER)
            if assignment is None:
                return
            self._route_train_calls(assignment)
            outcome: tuple[str, Any] = ("done", None)
            try:
                measured(assignment.config)
            except LeaveTrial:
                outcome = ("left", None)
            except Exception:
                outcome = ("error", traceback.format_exc())
            finally:
                free_memory()
            self.finished(assignment.seq, _RANK, outcome)

    def _route_train_calls(self, assignment: Assignment) -> None:
        """This process's ``ray.train.*`` calls serve `assignment` (Train's local mode)."""
        import ray.train

        from sweeplab.raycompat import route_train_calls_in_process

        steps = itertools.count()

        def report(metrics: dict[str, Any], checkpoint: Any) -> Any:
            saved = None
            if checkpoint is not None:
                saved = self.checkpoint_folder(assignment.seq)
                Path(saved).parent.mkdir(parents=True, exist_ok=True)
                shutil.copytree(checkpoint.path, saved, dirs_exist_ok=True)
            decision = self.report(
                assignment.seq, assignment.generation, next(steps), _RANK, metrics, saved
            )
            if decision == LEAVE:
                raise LeaveTrial()
            return ray.train.Checkpoint(saved) if saved is not None else None

        restored = ray.train.Checkpoint(assignment.checkpoint) if assignment.checkpoint else None
        route_train_calls_in_process(
            experiment_name=Path(assignment.folder).name, restored=restored, reporter=report
        )


def start_in_process_hosts(
    *,
    names: tuple[str, ...],
    train_func: Callable[..., Any],
    use_gpu: bool,
    resources_per_worker: Mapping[str, float],
    storage: str,
    on_wait: WaitHook | None = None,
) -> list[Any]:
    """Starts one in-process slot per name, each reserving one worker's resources (`on_wait`:
    see `wait_until_ready`)."""
    import ray

    resources = {
        k.upper() if k in ("cpu", "gpu") else k: v for k, v in resources_per_worker.items()
    }
    cpus = resources.pop("CPU", 1)
    gpus = resources.pop("GPU", 1 if use_gpu else 0)
    host_cls = ray.remote(max_concurrency=64, max_restarts=0)(InProcessHost)
    hosts = [
        host_cls.options(
            name=name, num_cpus=cpus, num_gpus=gpus, resources=resources or None
        ).remote(
            train_func=train_func,
            num_workers=1,
            use_gpu=use_gpu,
            resources_per_worker=dict(resources_per_worker),
            placement_strategy="PACK",
            storage=storage,
            name=name,
        )
        for name in names
    ]
    wait_until_ready(hosts, on_wait)
    return hosts
