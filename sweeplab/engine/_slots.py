"""Warm trial slots: long-lived Ray Train groups that run one trial after another.

Starting a trainer group costs a Train controller, its helper actors and N workers that import
torch and build a process group: about 8 s for 2 CPU workers, more than many ASHA trials train.
A slot keeps one ``TorchTrainer`` group alive for the whole sweep. Train still owns placement,
the worker processes, the ``torch.distributed`` group, worker health and group restarts; its
workers run :func:`slot_worker_loop` instead of one function. The loop takes the next
*assignment* (a trial's config, the checkpoint it starts from and its folder) from the slot's
:class:`SlotHost` actor and runs the user's unchanged ``train_func`` on it.

Inside an assignment, ``ray.train.report`` goes to the host instead of Train: each rank's
report waits until every rank has reported the same step, the host hands the aggregated result
to the trial's Tune driver, and the ranks go on only once Tune has decided the trial continues.
A stopped, paused or exploited trial therefore leaves ``train_func`` at a report on every rank
together, and no rank is left waiting in a collective.

    Tune trial (driver, no CPU) --submit--> SlotHost --next_assignment--> workers (rank 0..N-1)
            ^                                  |  <------ report(step, rank, metrics) ------
            +--------- next_event -------------+  ------- "continue" / "leave" ------------>
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import math
import shutil
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "Assignment",
    "SlotHost",
    "close_slots",
    "describe_slots",
    "run_in_slot",
    "slot_name",
    "start_slots",
    "uses_slots",
    "waiting_trials_hold_nothing",
]

CONTINUE = "continue"
LEAVE = "leave"
# A rank raised and the others did not follow within this time: they may sit in a collective
# that will never complete, so the group is restarted (Train kills and restarts its workers).
_ERROR_QUORUM_S = 5.0
# How long a trial driver waits for a free slot before saying so in the log.
_CLAIM_WARN_S = 60.0
# Keys a slot adds to each report (the driver's multi-worker path adds the same).
WORKERS_KEY = "sweeplab_workers"
RESTARTS_KEY = "sweeplab_group_restarts"


def uses_slots(*, reuse_groups: bool, workers_per_trial: int | tuple[int, int]) -> bool:
    """Whether a sweep's trials run on warm trial slots.

    An elastic group resizes itself, so it cannot be a fixed slot. A one-worker trial needs no
    group at all: it runs in its Tune trial actor, which Tune reuses for the next trial, and
    for a paused or exploited trial's next segment (see `ResumeWhenStalled`), which is cheaper
    than any slot.
    """
    if not reuse_groups or not isinstance(workers_per_trial, int):
        return False
    return workers_per_trial > 1


def waiting_trials_hold_nothing(
    *, reuse_groups: bool, workers_per_trial: int | tuple[int, int]
) -> bool:
    """Whether a trial that waits to run holds no resources, so every trial can exist at once.

    A trial on a slot holds nothing until it claims one; a one-worker trial waits in Tune's
    queue for its actor's CPUs. A trial with its own group per trial would start that group.
    """
    return workers_per_trial == 1 or uses_slots(
        reuse_groups=reuse_groups, workers_per_trial=workers_per_trial
    )


def describe_slots(sweep: Any, concurrency: int) -> str:
    """One line for `sweeplab preview` and `sweeplab status`: how trials get their group."""
    workers = sweep.workers_per_trial
    if uses_slots(reuse_groups=sweep.reuse_groups, workers_per_trial=workers):
        return (
            f"{concurrency} warm trial slot(s): long-lived groups of {workers} worker(s), "
            "each running one trial after another"
        )
    if not sweep.reuse_groups:
        return "a new trainer group per trial (reuse_groups=False)"
    if not isinstance(workers, int):
        return "a new trainer group per trial (an elastic group cannot be a slot)"
    return "each trial in a reused trial actor (one worker, no group to start)"


def slot_name(prefix: str, index: int) -> str:
    """The Ray actor name of slot `index` of a sweep."""
    return f"{prefix}-slot-{index}"


@dataclasses.dataclass(frozen=True)
class Assignment:
    """One trial's run on a slot: what every rank needs to start `train_func`."""

    seq: int
    trial_id: str
    config: dict[str, Any]
    folder: str
    checkpoint: str | None
    metric: str
    mode: str
    checkpoints_to_keep: int
    metrics_from: str
    max_failures: int
    # Bumped when Train restarts the group: the restarted ranks count their reports from 0.
    generation: int = 0


class _LeaveTrial(BaseException):
    """Raised in `ray.train.report` when the trial ends there (stop, pause, exploit).

    A `BaseException`, so that a user's `except Exception` around a report cannot swallow it.
    """


class _Shelf:
    """A trial's reported checkpoints: the top `keep` by the metric, plus the latest."""

    def __init__(self, metric: str, mode: str, keep: int) -> None:
        self.metric, self.mode, self.keep = metric, mode, keep
        self.kept: list[tuple[float, str]] = []

    def add(self, path: str, metrics: Mapping[str, Any]) -> None:
        Path(path, ".sweeplab_metrics.json").write_text(json.dumps(dict(metrics), default=str))
        value = metrics.get(self.metric)
        score = float(value) if isinstance(value, (int, float)) else -math.inf
        if math.isnan(score):
            score = -math.inf
        elif self.mode == "min":
            score = -score
        self.kept.append((score, path))
        ranked = sorted(self.kept, key=lambda item: item[0], reverse=True)
        keep = {p for _, p in ranked[: self.keep]} | {path}
        for _, old in self.kept:
            if old not in keep:
                shutil.rmtree(old, ignore_errors=True)
        self.kept = [(s, p) for s, p in self.kept if p in keep]


Step = tuple[int, int]


@dataclasses.dataclass
class _Run:
    """The host's view of the assignment in progress."""

    assignment: Assignment
    shelf: _Shelf
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
    ended: dict[int, Any] = dataclasses.field(default_factory=dict)  # rank -> outcome
    in_report: set[int] = dataclasses.field(default_factory=set)  # ranks waiting in `report`
    closed: bool = False  # the driver has been told how the run ended


class SlotHost:
    """The actor that owns one warm slot: its trainer group and the trial running on it.

    A threaded actor: workers and the trial's driver block in its methods on one condition.
    """

    def __init__(
        self,
        *,
        train_func: Callable[..., Any],
        num_workers: int,
        use_gpu: bool,
        resources_per_worker: Mapping[str, float],
        placement_strategy: str,
        storage: str,
        name: str,
        start_group: bool = True,
    ) -> None:
        """Starts the slot's trainer group in the background (`start_group=False`: the
        caller drives the worker side itself, as the unit tests do)."""
        self._cond = threading.Condition()
        self._owner: str | None = None
        self._pending: Assignment | None = None
        self._run: _Run | None = None
        self._closing = False
        self._seq = 0
        self._workers: dict[int, str] = {}  # rank -> worker id that took the current run
        self._world_size = num_workers
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
        num_workers: int,
        use_gpu: bool,
        resources_per_worker,
        placement_strategy: str,
        storage: str,
        name: str,
    ) -> None:
        import ray
        import ray.train
        from ray.train.torch import TorchTrainer

        me = ray.get_runtime_context().current_actor
        trainer = TorchTrainer(
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
        """Ends the run at its next report (Tune stopped, paused or exploited the trial)."""
        with self._cond:
            if self._pending is not None and self._pending.seq == seq:
                self._pending = None
                self._owner = None
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
            self._world_size = world_size
            run = self._run
            if run is not None and self._workers.get(rank) not in (None, worker):
                # A new worker process for a rank of a running trial: Train restarted the group.
                self._restart_run(run)
            while True:
                run = self._run
                if run is not None and rank not in run.ended and self._workers.get(rank) is None:
                    self._workers[rank] = worker
                    return run.assignment
                if run is None and self._pending is not None:
                    assignment = self._pending
                    self._pending = None
                    self._run = _Run(
                        assignment,
                        _Shelf(assignment.metric, assignment.mode, assignment.checkpoints_to_keep),
                        latest_checkpoint=assignment.checkpoint,
                    )
                    self._workers = {rank: worker}
                    return assignment
                if self._closing:
                    return None
                self._cond.wait(1.0)

    def _restart_run(self, run: _Run) -> None:
        run.restarts += 1
        self._workers = {}
        run.gathered.clear()
        run.ended.clear()
        run.in_report.clear()
        if run.awaiting is not None:  # Tune has that result; the restarted ranks report anew
            run.decisions[run.awaiting] = LEAVE
            run.awaiting = None
        if run.stopped:
            self._end_run(("done", None))
        elif run.restarts > run.assignment.max_failures >= 0:
            self._end_run(
                ("error", f"its trainer group restarted {run.restarts} times (max_failures)")
            )
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
        from sweeplab.engine._driver import _aggregate as aggregate_metrics

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
                result[RESTARTS_KEY] = run.restarts
                saved = next((c for _, c in reports.values() if c), None)
                if saved is not None:
                    run.shelf.add(saved, result)
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
        run.closed = True
        self._finished[run.assignment.seq] = run
        if len(self._finished) > 8:
            self._finished.pop(min(self._finished))
        self._run = None
        self._owner = None
        self._workers = {}
        self.trials_run += 1
        self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()

    def ready(self) -> bool:
        return True


class _SlotTrainFnUtils:
    """Train's per-worker utilities, with `report` and `get_checkpoint` routed to the slot."""

    def __init__(self, base: Any, host: Any, assignment: Assignment, rank: int) -> None:
        import ray.train

        self._base = base
        self._host = host
        self._assignment = assignment
        self._rank = rank
        self._step = 0
        self._checkpoint = (
            ray.train.Checkpoint(assignment.checkpoint) if assignment.checkpoint else None
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._base, name)

    def report(
        self, metrics: dict[str, Any], checkpoint: Any = None, *args: Any, **kwargs: Any
    ) -> None:
        import ray
        import ray.train

        saved = None
        if checkpoint is not None:
            saved = ray.get(self._host.checkpoint_folder.remote(self._assignment.seq))
            Path(saved).mkdir(parents=True, exist_ok=True)
            shutil.copytree(checkpoint.path, saved, dirs_exist_ok=True)
        decision = ray.get(
            self._host.report.remote(
                self._assignment.seq,
                self._assignment.generation,
                self._step,
                self._rank,
                dict(metrics),
                saved,
            )
        )
        self._step += 1
        if saved is not None:
            self._checkpoint = ray.train.Checkpoint(saved)
        if decision == LEAVE:
            raise _LeaveTrial()

    def get_checkpoint(self) -> Any:
        return self._checkpoint


def slot_worker_loop(config: dict[str, Any]) -> None:
    """The function Train runs on each worker of a slot: assignment after assignment."""
    import ray
    import ray.train

    from sweeplab.engine._datawait import MeasureDataWait
    from sweeplab.engine._ray_compat import current_train_fn_utils, install_train_fn_utils

    host = config["host"]
    train_func = MeasureDataWait(config["train_func"])
    context = ray.train.get_context()
    rank, world_size = context.get_world_rank(), context.get_world_size()
    worker = ray.get_runtime_context().get_worker_id()
    base = current_train_fn_utils()
    while True:
        assignment = ray.get(host.next_assignment.remote(rank, world_size, worker))
        if assignment is None:
            return
        install_train_fn_utils(_SlotTrainFnUtils(base, host, assignment, rank))
        outcome: tuple[str, Any] = ("done", None)
        try:
            train_func(assignment.config)
        except _LeaveTrial:
            outcome = ("left", None)
        except Exception:
            outcome = ("error", traceback.format_exc())
        finally:
            install_train_fn_utils(base)
            _free_memory()
        if ray.get(host.finished.remote(assignment.seq, rank, outcome)) == "restart":
            raise RuntimeError(
                f"trial {assignment.trial_id} failed on rank {rank} while other ranks did not: "
                "restarting the slot's group"
            )


def _free_memory() -> None:
    gc.collect()
    with contextlib.suppress(Exception):
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()


# -- the sweep driver's side ---------------------------------------------------------------


def start_slots(
    *,
    names: tuple[str, ...],
    train_func: Callable[..., Any],
    num_workers: int,
    use_gpu: bool,
    resources_per_worker: Mapping[str, float],
    placement_strategy: str,
    storage: str,
) -> list[Any]:
    """Starts one slot per name (their groups come up in the background); returns the actors."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from sweeplab.engine._ray_compat import head_node_id

    host_cls = ray.remote(num_cpus=0, max_concurrency=64, max_restarts=0)(SlotHost)
    # A slot's host (and the Train controller that its `fit()` starts beside it) lives on the
    # head node: a lost worker node then costs the slot a group restart, not the slot. (The
    # driver's own node is not enough: a driver joins the raylet of its IP address, and on a
    # machine that runs several nodes, as the loopback tests do, that can be a worker node.)
    # The affinity is hard: a soft one placed one of three zero-CPU actors on the other node of
    # an idle loopback cluster, and a slot host there died with that node (the node-kill test
    # failed so). The host reserves no resources, so the head can always hold it; Train places
    # the slot's controller on the host's node by itself.
    here = NodeAffinitySchedulingStrategy(head_node_id(), soft=False)
    hosts = [
        host_cls.options(name=name, scheduling_strategy=here).remote(
            train_func=train_func,
            num_workers=num_workers,
            use_gpu=use_gpu,
            resources_per_worker=dict(resources_per_worker),
            placement_strategy=placement_strategy,
            storage=storage,
            name=name,
        )
        for name in names
    ]
    ray.get([h.ready.remote() for h in hosts])
    return hosts


def close_slots(hosts: list[Any], timeout_s: float = 10.0) -> None:
    """Lets each slot's workers return, then ends the hosts (and with them their groups)."""
    import ray

    with contextlib.suppress(Exception):
        ray.wait([h.close.remote() for h in hosts], num_returns=len(hosts), timeout=timeout_s)
    for host in hosts:
        with contextlib.suppress(Exception):
            ray.kill(host)


# -- the Tune trial's side -----------------------------------------------------------------

# The slot run of this trial actor, stopped when Tune stops the trial.
_CURRENT: list[tuple[Any, int]] = []


def stop_current_run() -> None:
    import ray

    while _CURRENT:
        host, seq = _CURRENT.pop()
        with contextlib.suppress(Exception):
            ray.get(host.stop.remote(seq), timeout=10)


def _claim(names: tuple[str, ...], trial_id: str) -> Any:
    import logging

    import ray

    started = time.monotonic()
    warned = False
    while True:
        failures = []
        for name in names:
            try:
                host = ray.get_actor(name)
                refusal = ray.get(host.claim.remote(trial_id))
            except Exception as exc:  # the slot's actor is gone
                refusal = repr(exc)
            if refusal is None:
                return host
            if refusal != "busy":
                failures.append(f"{name}: {refusal}")
        if len(failures) == len(names):
            raise RuntimeError("No trial slot can serve: " + "; ".join(failures))
        if not warned and time.monotonic() - started > _CLAIM_WARN_S:
            logging.getLogger(__name__).warning("Trial %s waits for a free slot.", trial_id)
            warned = True
        time.sleep(0.05)


def run_in_slot(
    *,
    slots: tuple[str, ...],
    trial_id: str,
    config: dict[str, Any],
    folder: Path,
    metric: str,
    mode: str,
    checkpoints_to_keep: int,
    metrics_from: str,
    max_failures: int,
) -> None:
    """Runs one Tune trial on a free warm slot, reporting each step to Tune."""
    import ray
    import ray.tune

    restored = ray.tune.get_checkpoint()
    folder.mkdir(parents=True, exist_ok=True)
    host = _claim(slots, trial_id)
    seq = ray.get(
        host.submit.remote(
            trial_id,
            {
                "config": config,
                "folder": str(folder),
                "checkpoint": restored.path if restored is not None else None,
                "metric": metric,
                "mode": mode,
                "checkpoints_to_keep": checkpoints_to_keep,
                "metrics_from": metrics_from,
                "max_failures": max_failures,
            },
        )
    )
    _CURRENT.append((host, seq))
    decision = None
    try:
        while True:
            event = ray.get(host.next_event.remote(seq, decision))
            decision = None
            if event is None:
                continue
            kind, payload = event
            if kind == "done":
                return
            if kind == "error":
                raise RuntimeError(f"Trial {trial_id} failed in its slot:\n{payload}")
            metrics, checkpoint = payload
            if checkpoint is not None:
                metrics["checkpoint_path"] = checkpoint
                ray.tune.report(metrics, checkpoint=ray.tune.Checkpoint(checkpoint))
            else:
                ray.tune.report(metrics)
            decision = CONTINUE
    finally:
        # Tune stopped the trial inside `report` (SystemExit) or the driver failed: the ranks
        # leave at the report they wait in.
        stop_current_run()
