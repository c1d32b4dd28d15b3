"""The Ray backend of sweeplab's trial loop: trials train on warm slots, through public Ray APIs.

A warm slot (`sweeplab.engine.slots`) is a Ray Train ``TorchTrainer`` group that runs one trial
after another; its host actor hands each step's aggregated report out and each rank the
decision on it. Where each trial needs a group of its own (``reuse_groups=False``, an elastic
group) the backend starts a slot for each run and shuts it when the run leaves: the same host,
with a group that serves one run. `SlotBackend` drives the hosts straight from the loop, with no
Tune trial in between: the loop's ``train`` of a trial's first iteration (or of one after a pause
or a failure) starts a run on a free slot from the trial's latest checkpoint (after PBT's exploit,
a copy of the donor's), ``train`` of any other iteration lets the run go on from the report it
waits at, and ``end`` lets it leave there.
Everything it calls is Ray's public actor API (``ray.wait``, ``ray.get``, actor methods).

    TrialLoop --train/end--> SlotBackend --submit / next_event(decision)--> SlotHost --> ranks
        ^                        |
        +------ next_report -----+  (ray.wait over the runs' next_event calls)
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import itertools
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeplab.engine._resolved import ResolvedSweep
from sweeplab.engine._session import pickle_spec_by_value
from sweeplab.engine._trial_mode import TrialMode
from sweeplab.engine.slots import (
    CONTINUE,
    LEAVE,
    close_slots,
    slot_name,
    start_in_process_hosts,
    start_slots,
)
from sweeplab.keys import CHECKPOINT_PATH_KEY
from sweeplab.loop import BackendReport, LoopTrial, TrialLoop, sweep_loop

if TYPE_CHECKING:
    from sweeplab.space import TuneSearch
    from sweeplab.spec import Sweep

__all__ = ["SlotBackend", "attempt_name", "slot_loop"]


def attempt_name(train_storage: str, trial_id: str) -> str:
    """A fresh Train run name for each start of the trial.

    A restarted trial (PBT exploit, retry, resumed sweep) starts from the checkpoint the loop
    hands it; reusing the previous run's name would make Train restore that run's own latest
    checkpoint instead.
    """
    base = Path(train_storage)
    attempt = 0
    while (base / f"{trial_id}_{attempt}").exists():
        attempt += 1
    return f"{trial_id}_{attempt}"


@contextlib.contextmanager
def slot_loop(
    sweep: Sweep,
    *,
    storage: Path,
    slots: int = 1,
    budget_iterations: int | None = None,
    in_process: bool | None = None,
    search: TuneSearch | None = None,
    on_wait: Callable[[int, int], None] | None = None,
    keep_reports: bool = True,
) -> Iterator[TrialLoop]:
    """The trial loop of `sweep` on `slots` warm slots of the connected Ray cluster.

    The slots (each a ``TorchTrainer`` group of the sweep's ``workers_per_trial`` workers,
    reserving its ``worker_resources``) start on entry and close on exit; each trial's runs
    write their checkpoints under ``storage/trials``. Call `TrialLoop.run` inside.

    A one-worker trial runs in its slot's host actor itself (`InProcessHost`: no trainer
    group, the worker's resources reserved by the host); `in_process` overrides that choice
    (False: a one-worker group).
    Where each trial needs a group of its own (`TrialMode.GROUP_PER_TRIAL`) no slot starts on
    entry: each run starts one, at most `slots` at once, and shuts it when it leaves.
    `search` replaces the search the sweep's strategy builds (a warm-started one).
    `on_wait(pending, total)` is told every few seconds while slots wait for their resources
    to start, on entry or for a run (the engine's stall watchdog raises from it to fail).
    `keep_reports` False: an ended trial keeps only its last result (see `TrialLoop`).

    Raises:
        SpecError: If the sweep's strategy cannot run in the loop (a configured PBT object, a
            warm start).
    """
    workers = sweep.workers_per_trial
    mode = ResolvedSweep.trial_mode_of(sweep)
    storage = Path(storage)
    loop = sweep_loop(
        sweep,
        _NoBackendYet(),
        workers=slots,
        budget_iterations=budget_iterations,
        search=search,
        keep_reports=keep_reports,
    )
    prefix = f"sweeplab-loop-{sweep.name}-{time.time_ns()}"
    pickle_spec_by_value(sweep)
    if in_process is None:
        in_process = mode is TrialMode.IN_PROCESS
    if in_process and workers != 1:
        raise ValueError("only a one-worker trial runs in its slot's host (in_process)")

    def start(names: tuple[str, ...]) -> list[Any]:
        if in_process:
            return start_in_process_hosts(
                names=names,
                train_func=sweep.train_func,
                use_gpu=sweep.use_gpu,
                resources_per_worker=sweep.worker_resources,
                storage=str(storage / "slots"),
                on_wait=on_wait,
            )
        return start_slots(
            names=names,
            train_func=sweep.train_func,
            num_workers=workers,
            use_gpu=sweep.use_gpu,
            resources_per_worker=sweep.worker_resources,
            placement_strategy=sweep.placement_strategy,
            storage=str(storage / "slots"),
            on_wait=on_wait,
        )

    per_run = mode is TrialMode.GROUP_PER_TRIAL
    hosts = [] if per_run else start(tuple(slot_name(prefix, i) for i in range(slots)))

    def replace(dead: Any) -> Any:
        """A fresh slot for one whose host died (a one-worker trial's process killed)."""
        (new,) = start((slot_name(f"{prefix}-r{len(hosts)}", 0),))
        hosts.append(new)
        return new

    runs = itertools.count()

    def new_group() -> Any:
        """A slot for one run of a trial that needs a group of its own (the backend shuts it)."""
        (new,) = start((slot_name(f"{prefix}-run{next(runs)}", 0),))
        return new

    try:
        loop.backend = SlotBackend(
            hosts,
            replace_host=None if per_run else replace,
            new_group=new_group if per_run else None,
            capacity=slots,
            storage=storage / "trials",
            metric=sweep.metric,
            mode=sweep.mode,
            checkpoints_to_keep=sweep.checkpoints_to_keep,
            metrics_from=sweep.metrics_from,
            max_failures=sweep.max_failures,
        )
        yield loop
    finally:
        loop.close()
        close_slots([*hosts, *getattr(loop.backend, "open_groups", [])])


def _nothing() -> None:
    """The backend's tick when nothing watches it."""


class _NoBackendYet:
    """Stands in while the loop is built, so that a refused strategy starts no slot."""

    def train(self, trial: LoopTrial, iteration: int) -> None:
        raise AssertionError("the loop trained before its backend was set")

    def next_report(self) -> BackendReport | None:
        raise AssertionError("the loop ran before its backend was set")

    def end(self, trial: LoopTrial) -> None:
        raise AssertionError("the loop ended a trial before its backend was set")

    def copy_checkpoint(self, donor: LoopTrial, trial: LoopTrial) -> None:
        raise AssertionError("the loop exploited before its backend was set")


@dataclasses.dataclass(eq=False)
class _SlotRun:
    """One run of a trial on a slot: from its start (or resume) until it leaves the slot."""

    trial: LoopTrial
    host: Any
    seq: int
    asked_at: float  # when the loop asked for the iteration the run trains now
    ended: bool = False  # the loop ended the trial: the run's reports are dropped


class SlotBackend:
    """Trains the loop's trials on warm slots (a `sweeplab.loop.TrialBackend`).

    The loop must run at most as many trials at once as there are slots; a trial asked to
    train while every slot still winds down another's run waits for the first slot free.

    Args:
        hosts: The slots' host actors (`sweeplab.engine.slots.start_slots`).
        storage: The folder under which each trial's run writes its checkpoints.
        metric, mode: What ranks the checkpoints each run keeps.
        checkpoints_to_keep: Checkpoints kept per run.
        metrics_from: Whose metrics a step reports (``"rank0"`` or ``"mean"``).
        max_failures: Group restarts a run survives (a restart resumes from its latest
            checkpoint); the loop's own ``max_failures`` retries a failed training function.
        clock: Seconds since some start (the loop's report times count from the first call).
        replace_host: Starts a slot in place of one whose host actor died (the process of an
            in-process slot killed); None: the dead slot is dropped.
        new_group: Starts a slot for one run (a group per trial): given, `hosts` is empty,
            each run gets a slot of its own, at most `capacity` at once, and its slot is shut
            when the run leaves.
        capacity: The most runs at once on slots of their own (`new_group`).
    """

    def __init__(
        self,
        hosts: list[Any],
        *,
        replace_host: Callable[[Any], Any] | None = None,
        new_group: Callable[[], Any] | None = None,
        capacity: int = 0,
        storage: Path,
        metric: str,
        mode: str,
        checkpoints_to_keep: int = 2,
        metrics_from: str = "rank0",
        max_failures: int = 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not hosts and (new_group is None or capacity < 1):
            raise ValueError("SlotBackend needs at least one slot, or new_group and capacity")
        self._free = list(hosts)
        self._new_group = new_group
        self._capacity = capacity if new_group is not None else 0
        # The slots started for one run each (`new_group`) and not shut yet.
        self.open_groups: list[Any] = []
        self._storage = Path(storage)
        self._fields = {
            "metric": metric,
            "mode": mode,
            "checkpoints_to_keep": checkpoints_to_keep,
            "metrics_from": metrics_from,
            "max_failures": max_failures,
        }
        self._clock = clock
        self._replace_host = replace_host
        # Called whenever a wait for the runs returns (a stall watchdog's look at the clock).
        self.tick: Callable[[], None] = _nothing
        self._start = clock()
        self._runs: dict[LoopTrial, _SlotRun] = {}  # trials whose run holds a slot
        self._calls: dict[Any, _SlotRun] = {}  # next_event call -> its run
        self._waiting: collections.deque[LoopTrial] = collections.deque()
        # The latest checkpoint of each trial (a resumed sweep's engine restores it).
        self.checkpoints: dict[LoopTrial, str] = {}
        self._exploits = 0  # PBT's checkpoint copies made
        self._copies: dict[LoopTrial, str] = {}  # each trial's latest copy

    # -- sweeplab.loop.TrialBackend -----------------------------------------------------

    def train(self, trial: LoopTrial, iteration: int) -> None:
        run = self._runs.get(trial)
        if run is not None and not run.ended:
            # The run waits at its last report: it goes on.
            run.asked_at = self._clock()
            self._call(run, CONTINUE)
            return
        self._waiting.append(trial)
        self._start_waiting()

    def next_report(self) -> BackendReport | None:
        import ray

        while self._calls:
            ready, _ = ray.wait(list(self._calls), num_returns=1)
            self.tick()  # at least every few seconds: a run's wait returns empty after 5 s
            run = self._calls.pop(ready[0])
            try:
                event = ray.get(ready[0])
            except Exception as exc:  # the slot's host died
                event = ("error", f"The trial's slot failed: {exc!r}")
                run.host = self._replace_dead(run.host)
            if event is None:  # nothing yet: wait on
                self._call(run, None)
                continue
            kind, payload = event
            if kind == "report":
                if run.ended:  # the loop ended the trial while it trained: it leaves here
                    self._call(run, LEAVE)
                    continue
                metrics, checkpoint = payload
                if checkpoint is not None:
                    self.checkpoints[run.trial] = checkpoint
                    metrics[CHECKPOINT_PATH_KEY] = checkpoint
                now = self._clock()
                seconds, run.asked_at = now - run.asked_at, now
                return BackendReport(run.trial, metrics, seconds, now - self._start)
            # "done" or "error": the run left its slot.
            if run.host is not None and self._new_group is not None:
                close_slots([run.host], timeout_s=30.0)  # its group served this run only
                self.open_groups.remove(run.host)
            elif run.host is not None:
                self._free.append(run.host)
            if self._runs.get(run.trial) is run:
                del self._runs[run.trial]
            self._start_waiting()
            if not run.ended:
                error = str(payload) if kind == "error" else None
                return BackendReport.ended(run.trial, self._clock() - self._start, error=error)
        return None

    def end(self, trial: LoopTrial) -> None:
        if trial in self._waiting:
            self._waiting.remove(trial)
        run = self._runs.get(trial)
        if run is None or run.ended:
            return
        run.ended = True
        if run not in self._calls.values():
            self._call(run, LEAVE)  # it waits at a report: it leaves there
        else:
            run.host.stop.remote(run.seq)  # it trains: it leaves at its next report

    def copy_checkpoint(self, donor: LoopTrial, trial: LoopTrial) -> None:
        """`trial`'s next run starts from a copy of `donor`'s latest checkpoint: the donor
        trains on (and its runs delete checkpoints they no longer keep) before the recipient
        gets a slot. Without a donor checkpoint, the trial starts its next run afresh."""
        source = self.checkpoints.get(donor)
        self.checkpoints.pop(trial, None)
        if source is None:
            return
        self._exploits += 1
        copy = self._storage / "exploits" / f"{trial.trial_id}-{self._exploits:05d}"
        shutil.copytree(source, copy)
        earlier = self._copies.pop(trial, None)
        if earlier is not None:  # an earlier exploit's copy, restored from since
            shutil.rmtree(earlier, ignore_errors=True)
        self.checkpoints[trial] = self._copies[trial] = str(copy)

    # -- the slots ------------------------------------------------------------------------

    def _replace_dead(self, host: Any) -> Any:
        """The slot that takes the place of `host`, whose actor died; None if none does."""
        import ray

        with contextlib.suppress(Exception):
            ray.kill(host)
        if host in self.open_groups:  # a run's own slot: the next run starts another
            self.open_groups.remove(host)
        return self._replace_host(host) if self._replace_host is not None else None

    def _start_waiting(self) -> None:
        import ray

        while self._waiting and (self._free or len(self._runs) < self._capacity):
            trial = self._waiting.popleft()
            if self._free:
                host = self._free.pop(0)
            else:
                host = self._new_group()  # type: ignore[misc]
                self.open_groups.append(host)
            refusal = ray.get(host.claim.remote(trial.trial_id))
            if refusal is not None:
                raise RuntimeError(f"slot refused trial {trial.trial_id}: {refusal}")
            # A fresh folder for each run of the trial, as the engine names a trial's attempts.
            folder = self._storage / attempt_name(str(self._storage), trial.trial_id)
            folder.mkdir(parents=True, exist_ok=True)
            seq = ray.get(
                host.submit.remote(
                    trial.trial_id,
                    {
                        "config": trial.decoded,
                        "folder": str(folder),
                        "checkpoint": self.checkpoints.get(trial),
                        **self._fields,
                    },
                )
            )
            run = _SlotRun(trial, host, seq, asked_at=self._clock())
            self._runs[trial] = run
            self._call(run, None)

    def _call(self, run: _SlotRun, decision: str | None) -> None:
        self._calls[run.host.next_event.remote(run.seq, decision)] = run
