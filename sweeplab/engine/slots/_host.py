"""A warm slot's host actor: owns the slot's trainer group and the trial running on it.

The host starts a ``TorchTrainer`` whose workers run :func:`slot_worker_loop`, hands each rank
the next :class:`Assignment`, gathers the ranks' reports of one step, passes the aggregated
result to the trial's Tune driver and each rank the driver's decision. It also notices a
restarted group (a new worker process for a rank) and a rank that failed alone.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sweeplab.engine._topk import TopKCheckpoints
from sweeplab.engine.slots._protocol import LEAVE, Assignment
from sweeplab.engine.slots._worker import slot_worker_loop
from sweeplab.keys import GROUP_RESTARTS_KEY, WORKERS_KEY

__all__ = ["SlotHost", "aggregate_metrics"]


def aggregate_metrics(worker_metrics: list[dict[str, Any]], metrics_from: str) -> dict[str, Any]:
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


# A rank raised and the others did not follow within this time: they may sit in a collective
# that will never complete, so the group is restarted (Train kills and restarts its workers).
_ERROR_QUORUM_S = 5.0


Step = tuple[int, int]


@dataclasses.dataclass
class _Run:
    """The host's view of the assignment in progress."""

    assignment: Assignment
    checkpoints: TopKCheckpoints
    events: list[tuple[str, Any]] = dataclasses.field(default_factory=list)
    # (generation, step) -> rank -> (metrics, checkpoint folder or None)
    gathered: dict[Step, dict[int, tuple[dict[str, Any], str | None]]] = dataclasses.field(
        default_factory=dict
    )
    decisions: dict[Step, str] = dataclasses.field(default_factory=dict)
    awaiting: Step | None = None  # the step whose result Tune has and has not decided on
    next_step: int = 0  # the next step a checkpoint folder is named after
    stopped: bool = False
    latest_checkpoint: str | None = None
    restarts: int = 0
    resizes: int = 0  # restarts of an elastic group at another size (no failure)
    ended: dict[int, Any] = dataclasses.field(default_factory=dict)  # rank -> outcome
    in_report: set[int] = dataclasses.field(default_factory=set)  # ranks waiting in `report`
    closed: bool = False  # the driver has been told how the run ended

    @classmethod
    def of(cls, assignment: Assignment) -> _Run:
        """A run of `assignment`, from its checkpoint, keeping its top checkpoints."""
        return cls(
            assignment,
            TopKCheckpoints(
                metric=assignment.metric,
                mode=assignment.mode,
                keep=assignment.checkpoints_to_keep,
            ),
            latest_checkpoint=assignment.checkpoint,
        )


class SlotHost:
    """The actor that owns one warm slot: its trainer group and the trial running on it.

    A threaded actor: workers and the trial's driver block in its methods on one condition.
    """

    def __init__(
        self,
        *,
        train_func: Callable[..., Any],
        num_workers: int | tuple[int, int],
        use_gpu: bool,
        resources_per_worker: Mapping[str, float],
        placement_strategy: str,
        storage: str,
        name: str,
        start_group: bool = True,
    ) -> None:
        """Starts the slot's trainer group in the background (`start_group=False`: the
        caller drives the worker side itself, as the unit tests do). An elastic group
        (`num_workers=(min, max)`) runs at the size Train gives it; the ranks say it."""
        self._cond = threading.Condition()
        self._owner: str | None = None
        self._pending: Assignment | None = None
        self._run: _Run | None = None
        self._closing = False
        self._seq = 0
        self._workers: dict[int, str] = {}  # rank -> worker id that took the current run
        self._world_size = num_workers if isinstance(num_workers, int) else 0
        self._group_error: BaseException | None = None
        self._finished: dict[int, _Run] = {}  # the last few runs, for their drivers' last calls
        self.trials_run = 0
        self._fit = threading.Thread(
            target=self._serve,
            kwargs={
                "train_func": train_func,
                "num_workers": num_workers,
                "use_gpu": use_gpu,
                "resources_per_worker": dict(resources_per_worker),
                "placement_strategy": placement_strategy,
                "storage": storage,
                "name": name,
            },
            name=f"sweeplab-{name}",
            daemon=True,
        )
        if start_group:
            self._fit.start()

    def _serve(
        self,
        *,
        train_func: Any,
        num_workers: int | tuple[int, int],
        use_gpu: bool,
        resources_per_worker,
        placement_strategy: str,
        storage: str,
        name: str,
    ) -> None:
        import ray
        import ray.train

        from sweeplab.raycompat import lean_torch_trainer

        me = ray.get_runtime_context().current_actor
        trainer = lean_torch_trainer()(
            slot_worker_loop,
            train_loop_config={"host": me, "train_func": train_func},
            scaling_config=ray.train.ScalingConfig(
                num_workers=num_workers,
                use_gpu=use_gpu,
                resources_per_worker=resources_per_worker,
                placement_strategy=placement_strategy,
            ),
            run_config=ray.train.RunConfig(
                name=name,
                storage_path=storage,
                # A dead worker restarts the group; the trial it ran continues from its latest
                # checkpoint and counts the restart against its own `max_failures`.
                failure_config=ray.train.FailureConfig(max_failures=-1),
            ),
        )
        try:
            trainer.fit()
        except BaseException as exc:
            with self._cond:
                self._group_error = exc
                if self._run is not None:
                    self._end_run(("error", f"The trial slot's trainer group failed: {exc!r}"))
                self._cond.notify_all()

    # -- the trial driver's side ----------------------------------------------------------

    def claim(self, trial_id: str) -> str | None:
        """Takes this slot for `trial_id` if it is free: None, "busy", or why it cannot serve."""
        with self._cond:
            if self._group_error is not None:
                return f"its trainer group failed: {self._group_error!r}"
            if self._closing:
                return "the sweep is ending"
            if self._owner is None and self._run is None and self._pending is None:
                self._owner = trial_id
                return None
            return None if self._owner == trial_id else "busy"

    def submit(self, trial_id: str, fields: dict[str, Any]) -> int:
        """Queues the claimed trial's assignment; returns its sequence number."""
        with self._cond:
            if self._owner != trial_id:
                raise RuntimeError(f"slot is not claimed by trial {trial_id}")
            self._seq += 1
            self._pending = Assignment(seq=self._seq, trial_id=trial_id, **fields)
            self._cond.notify_all()
            return self._seq

    def next_event(self, seq: int, decision: str | None, timeout_s: float = 5.0) -> Any:
        """Decides the previous step (`decision`), then returns the run's next event or None."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            run = self._run_of(seq)
            if run is not None and decision is not None and run.awaiting is not None:
                run.decisions[run.awaiting] = decision
                run.awaiting = None
                if decision == LEAVE:
                    run.stopped = True
                self._cond.notify_all()
            while True:
                run = self._run_of(seq)
                if run is not None and run.events:
                    return run.events.pop(0)
                if self._group_error is not None and (run is None or run.closed):
                    return (
                        "error",
                        f"The trial slot's trainer group failed: {self._group_error!r}",
                    )
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._cond.wait(remaining)

    def stop(self, seq: int) -> None:
        """Ends the run at its next report (the loop stopped, paused or exploited the trial).

        A run that no rank has taken yet never starts: it is done at once, and says so to
        the driver's next `next_event` (which would otherwise wait for it for ever).
        """
        with self._cond:
            if self._pending is not None and self._pending.seq == seq:
                dropped = _Run.of(self._pending)
                self._pending = None
                self._owner = None
                dropped.events.append(("done", None))
                self._remember_finished(dropped)
            run = self._run_of(seq)
            if run is not None:
                run.stopped = True
                if run.awaiting is not None:
                    run.decisions[run.awaiting] = LEAVE
                    run.awaiting = None
            self._cond.notify_all()

    def _run_of(self, seq: int) -> _Run | None:
        if self._run is not None and self._run.assignment.seq == seq:
            return self._run
        return self._finished.get(seq)

    # -- the workers' side ----------------------------------------------------------------

    def next_assignment(self, rank: int, world_size: int, worker: str) -> Assignment | None:
        """Blocks until there is a run for this rank; None when the slot closes."""
        with self._cond:
            run = self._run
            if run is not None and self._workers.get(rank) not in (None, worker):
                # A new worker process for a rank of a running trial: Train restarted the group
                # (at another size: an elastic group resized, which is no failure).
                self._restart_run(run, resized=world_size != self._world_size)
            self._world_size = world_size
            while True:
                run = self._run
                if run is not None and rank not in run.ended and self._workers.get(rank) is None:
                    self._workers[rank] = worker
                    return run.assignment
                if run is None and self._pending is not None:
                    assignment = self._pending
                    self._pending = None
                    self._run = _Run.of(assignment)
                    self._workers = {rank: worker}
                    return assignment
                if self._closing:
                    return None
                self._cond.wait(1.0)

    def _restart_run(self, run: _Run, *, resized: bool = False) -> None:
        run.restarts += 1
        run.resizes += resized
        self._workers = {}
        run.gathered.clear()
        run.ended.clear()
        run.in_report.clear()
        if run.awaiting is not None:  # Tune has that result; the restarted ranks report anew
            run.decisions[run.awaiting] = LEAVE
            run.awaiting = None
        if run.stopped:
            self._end_run(("done", None))
        elif (failures := run.restarts - run.resizes) > run.assignment.max_failures >= 0:
            self._end_run(("error", f"its trainer group restarted {failures} times (max_failures)"))
        else:
            # The trial continues from its latest checkpoint in the restarted group.
            run.assignment = dataclasses.replace(
                run.assignment, checkpoint=run.latest_checkpoint, generation=run.restarts
            )
        self._cond.notify_all()

    def checkpoint_folder(self, seq: int) -> str:
        """Where the ranks of `seq` write the checkpoint of their next report."""
        with self._cond:
            run = self._run_of(seq)
            step = run.next_step if run is not None else 0
            return str(Path(self._folder(seq), f"checkpoint_{step:06d}"))

    def _folder(self, seq: int) -> str:
        run = self._run_of(seq)
        return run.assignment.folder if run is not None else ""

    def report(
        self,
        seq: int,
        generation: int,
        index: int,
        rank: int,
        metrics: dict[str, Any],
        checkpoint: str | None,
    ) -> str:
        """One rank's report; returns once Tune decided whether the trial goes on."""

        step = (generation, index)
        with self._cond:
            run = self._run_of(seq)
            if (
                run is None
                or run is not self._run
                or run.stopped
                or generation != run.assignment.generation
            ):
                return LEAVE
            run.gathered.setdefault(step, {})[rank] = (metrics, checkpoint)
            if len(run.gathered[step]) == self._world_size:
                reports = run.gathered.pop(step)
                ordered = [reports[r][0] for r in sorted(reports)]
                result = aggregate_metrics(ordered, run.assignment.metrics_from)
                result[WORKERS_KEY] = self._world_size
                result[GROUP_RESTARTS_KEY] = run.restarts
                saved = next((c for _, c in reports.values() if c), None)
                if saved is not None:
                    run.checkpoints.add(saved, result)
                    run.latest_checkpoint = saved
                    run.next_step += 1
                run.awaiting = step
                run.events.append(("report", (result, saved)))
                self._cond.notify_all()
            run.in_report.add(rank)
            self._cond.notify_all()
            try:
                while step not in run.decisions:
                    if run.stopped or run is not self._run:
                        return LEAVE
                    self._cond.wait(1.0)
                return run.decisions[step]
            finally:
                run.in_report.discard(rank)

    def finished(self, seq: int, rank: int, outcome: tuple[str, Any]) -> str:
        """A rank left `train_func`; returns "next", or "restart" to restart the group."""
        with self._cond:
            run = self._run_of(seq)
            if run is None or run is not self._run:
                return "next"
            run.ended[rank] = outcome
            self._cond.notify_all()
            deadline = time.monotonic() + _ERROR_QUORUM_S
            while run is self._run and len(run.ended) < self._world_size:
                if outcome[0] == "error" and len(run.ended) + len(run.in_report) >= (
                    self._world_size
                ):
                    # The other ranks wait in a report, not in a collective: they leave there.
                    self._end_run(outcome)
                    return "next"
                if outcome[0] == "error" and time.monotonic() >= deadline:
                    # The other ranks did not follow: they wait in a collective or a report,
                    # so the trial fails and the group is restarted under the next trial.
                    self._end_run(outcome)
                    return "restart"
                self._cond.wait(0.2)
            if run is self._run:
                errors = [o for o in run.ended.values() if o[0] == "error"]
                self._end_run(errors[0] if errors and not run.stopped else ("done", None))
            return "next"

    def _end_run(self, event: tuple[str, Any]) -> None:
        run = self._run
        if run is None:
            return
        run.events.append(event)
        self._remember_finished(run)
        self._run = None
        self._owner = None
        self._workers = {}
        self.trials_run += 1
        self._cond.notify_all()

    def _remember_finished(self, run: _Run) -> None:
        """Keeps an ended run (its last events) for the driver's next `next_event`."""
        run.closed = True
        self._finished[run.assignment.seq] = run
        if len(self._finished) > 8:
            self._finished.pop(min(self._finished))

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()

    def shut(self, timeout_s: float = 30.0) -> bool:
        """Closes the slot and waits until its trainer group has exited; whether it did.

        A group of one run (`reuse_groups=False`, an elastic group) is shut so, before its
        host is killed: its workers' resources are free for the next run's group, and Train's
        controller ends cleanly (a killed one holds its resource request for minutes).
        """
        self.close()
        if self._fit.is_alive():
            self._fit.join(timeout_s)
        return not self._fit.is_alive()

    def ready(self) -> bool:
        return True
