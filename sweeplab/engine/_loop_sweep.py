"""`sweeplab sweep`: a sweep run by sweeplab's own trial loop, no Tune controller.

The trials train on warm slots (`slot_loop`: a one-worker trial in its slot's host, a larger
one in a Train group), and each trial event reaches the same sinks as under Tune: the loop's
observer (`LoopSweepEvents`) tells the engine's `SweepEvents`, which tells the MLflow tracker
(or, untracked, an in-memory ranking), the live table and the sweep's callbacks. A warm start's
configs are suggested first. A trial that needs a group of its own (an elastic
group, ``reuse_groups=False``) starts one for each run. A killed sweep resumes (``--resume``)
from the loop's own snapshot (`_loop_state`), its trials' child runs found again and their
results read back from each trial's ``result.json``. The stall watchdog
watches the loop's events, looks at its clock whenever the backend's wait for the runs returns
(at least every 5 s), and while the trial slots wait for resources to start.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeplab.engine._heap import HeapTrimmer
from sweeplab.engine._loop_state import LoopSnapshots, lost_trials, restore_loop
from sweeplab.engine._outcome import SweepOutcome, finish_sweep
from sweeplab.engine._search import build_search
from sweeplab.engine._sinks import live, wire_sinks
from sweeplab.engine._slot_backend import SlotBackend, slot_loop
from sweeplab.loop import TERMINATED, LoopObserver, LoopTrial, TrialLoop

if TYPE_CHECKING:
    from sweeplab.engine._events import SweepEvents
    from sweeplab.engine._orphans import OrphanGroupReaper
    from sweeplab.engine._plan import ResourcePlan
    from sweeplab.engine._resolved import ResolvedSweep
    from sweeplab.engine._runner import SweepOptions
    from sweeplab.engine._warm import WarmStartPlan
    from sweeplab.engine._watchdog import StallWatchdog

__all__ = ["LoopSweepEvents", "run_on_loop", "write_json"]

logger = logging.getLogger(__name__)


def write_json(path: Path, data: Any) -> None:
    """`data` as indented JSON at `path` (the run folder's ``sweep.json``, ``warm_start.json``)."""
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")


class _TuneShaped:
    """A loop trial as the engine's `SweepEvents` and the tracker read a Tune trial."""

    __slots__ = ("_trial", "error_file", "local_path", "path")

    def __init__(self, trial: LoopTrial, folder: Path) -> None:
        self._trial = trial
        self.local_path = str(folder)
        self.path = str(folder)
        self.error_file: str | None = None

    @property
    def trial_id(self) -> str:
        return self._trial.trial_id

    @property
    def config(self) -> dict[str, Any]:
        return self._trial.config

    @property
    def status(self) -> str:
        return self._trial.status

    @property
    def last_result(self) -> dict[str, Any]:
        return self._trial.last_result


class LoopSweepEvents(LoopObserver):
    """Tells the engine's `SweepEvents` of each event of the trial loop, as Tune's callbacks do.

    Args:
        events: The sweep's events (tracker, live table, callbacks).
        folder: Where each trial's error text is written (``<trial_id>/error.txt``).
    """

    def __init__(
        self,
        events: SweepEvents,
        folder: Path,
        watchdog: StallWatchdog | None = None,
        snapshots: LoopSnapshots | None = None,
        reaper: OrphanGroupReaper | None = None,
    ) -> None:
        self.events = events
        self.folder = folder
        self.watchdog = watchdog
        self.snapshots = snapshots
        self.reaper = reaper  # removes the groups of trainer groups whose controller died
        self.heap = HeapTrimmer()  # gives the driver's freed C heap back every few seconds
        self.loop: TrialLoop | None = None  # the loop whose snapshots are taken
        self._changed = False  # a trial was made or ended since the last snapshot
        self._shaped: dict[LoopTrial, _TuneShaped] = {}

    def on_step_end(self) -> None:
        # A snapshot once the step that made or ended trials is applied whole.
        self._snapshot(now=self._changed)
        self._changed = False

    def _snapshot(self, *, now: bool = False) -> None:
        if self.snapshots is None or self.loop is None:
            return
        try:
            self.snapshots.maybe_save(self.loop, now=now)
        except Exception as exc:  # a state that does not pickle must not end the sweep
            logger.warning("the loop's snapshot failed, --resume will not work: %r", exc)
            self.snapshots = None

    def tick(self) -> None:
        """The stall watchdog looks at its clock: says (or, to fail, raises) a stall; orphaned
        placement groups are looked for and the driver's heap trimmed (each every 10 s)."""
        if self.watchdog is not None:
            self.watchdog.check(list(self._shaped.values()))
        if self.reaper is not None:
            self.reaper.tick()
        self.heap.maybe_trim()

    def _of(self, trial: LoopTrial) -> _TuneShaped:
        shaped = self._shaped.get(trial)
        if shaped is None:
            shaped = self._shaped[trial] = _TuneShaped(trial, self.folder / trial.trial_id)
        return shaped

    def on_trial_add(self, trial: LoopTrial) -> None:
        self.events.add_trial(self._of(trial))
        if self.snapshots is not None:
            self.snapshots.made(trial)
        self._changed = True  # a resume must not make it again

    def on_trial_start(self, trial: LoopTrial) -> None:
        self.events.on_trial_start(self._of(trial))
        if self.watchdog is not None:
            self.watchdog.on_trial_start(self._of(trial))

    def on_trial_result(self, trial: LoopTrial, result: dict[str, Any]) -> None:
        shaped = self._of(trial)
        # The trial's results, one JSON line each (Tune's `result.json`): a resumed sweep's
        # tracker reads them back for the points a killed driver had not stored yet.
        folder = Path(shaped.local_path)
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / "result.json").open("a") as file:
            file.write(json.dumps(result, default=str) + "\n")
        self.events.on_trial_result(shaped, result)
        if self.watchdog is not None:
            self.watchdog.on_trial_result(shaped, result)

    def on_trial_retry(self, trial: LoopTrial) -> None:
        self.events.on_trial_recover(self._of(trial))
        if self.reaper is not None:
            self.reaper.reap()

    def on_trial_end(self, trial: LoopTrial) -> None:
        shaped = self._shaped.pop(trial, None) or self._of(trial)
        self._tell_ended(trial, shaped)
        if self.watchdog is not None:
            self.watchdog.on_trial_end(shaped)
        if self.snapshots is not None:
            self.snapshots.ended(trial)  # a resume must not run it again
        self._changed = True

    def restored(self, loop: TrialLoop, loop_dir: Path) -> None:
        """A resumed sweep's trials, told to the sinks: each is registered (its child run
        found, its results read back), and each that had ended is ended again."""
        for trial in [*loop.trials, *lost_trials(loop_dir, loop)]:
            self.events.add_trial(self._of(trial))
            if trial.status == TERMINATED:
                self._tell_ended(trial, self._shaped.pop(trial))

    def _tell_ended(self, trial: LoopTrial, shaped: _TuneShaped) -> None:
        """The sinks learn that `trial` ended: as an error (its text in ``error.txt``, written
        where the trial has one: a resumed sweep's errored trial kept its own), or complete."""
        if trial.outcome != "error":
            self.events.on_trial_complete(shaped)
            return
        path = Path(shaped.local_path, "error.txt")
        if trial.error is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(trial.error)
        shaped.error_file = str(path)
        self.events.on_trial_error(shaped)
        if self.reaper is not None:
            self.reaper.reap()

    def on_trial_exploit(self, trial: LoopTrial, donor: LoopTrial, iteration: int) -> None:
        self.events.on_trial_exploit(trial.trial_id, donor.trial_id, iteration, trial.config)


def run_on_loop(
    resolved: ResolvedSweep,
    options: SweepOptions,
    plan: ResourcePlan,
    started: float,
    warm_start: WarmStartPlan | None = None,
) -> SweepOutcome:
    """Runs the resolved sweep on the connected Ray through the trial loop; see the module.

    A warm start's configs are suggested first (`build_search`).
    """
    from sweeplab.engine._events import SweepEvents
    from sweeplab.tracking import UntrackedRanking

    sinks = wire_sinks(resolved, options)
    watchdog, reaper = sinks.watchdog, sinks.reaper
    tracker = sinks.tracker
    ranking = None
    if tracker is None:
        ranking = UntrackedRanking(
            metric=resolved.metric,
            mode=resolved.mode,
            rank_by=resolved.rank_by,
            config_decoder=resolved.config_decoder(),
            scheduler_name=resolved.scheduler,
            max_iterations=resolved.max_iterations,
            objectives=resolved.sweep.objectives,
            constraints=resolved.sweep.constraints,
            pick=resolved.sweep.pick,
        )
    events = SweepEvents(
        sinks.callbacks,
        tracker=tracker if tracker is not None else ranking,
        max_iterations=resolved.max_iterations,
        decode=resolved.config_decoder(),
        metric=resolved.metric,
    )
    status, tracking = "FAILED", False
    trials: list[LoopTrial] = []
    try:
        write_json(resolved.run_dir / "sweep.json", resolved.sweep_json())
        if warm_start is not None:
            write_json(resolved.run_dir / "warm_start.json", warm_start.to_dict())
        watchdog.start()  # the slots' start is watched: resources another job holds stall it
        with slot_loop(
            resolved.sweep,
            storage=resolved.run_dir,
            slots=plan.concurrency,
            search=build_search(resolved.sweep, warm_start),
            on_wait=watchdog.slots_wait,
            keep_reports=False,  # the sinks have each report: the driver stays flat
        ) as loop:
            snapshots = LoopSnapshots(resolved.run_dir)
            observer = LoopSweepEvents(
                events, resolved.run_dir / "trials", watchdog, snapshots, reaper
            )
            observer.loop = loop
            loop.observer = observer
            backend = loop.backend
            assert isinstance(backend, SlotBackend)
            backend.tick = observer.tick
            if resolved.resume:
                backend.checkpoints = restore_loop(loop, resolved.run_dir, observer.folder)
            watchdog.start()  # the slots are up: their start was no silence of the trials
            if resolved.time_budget_s is not None:
                loop.deadline = started + resolved.time_budget_s
            if tracker is not None:
                tracker.start(started_at=time.time() - (time.monotonic() - started))
                tracking = True
                if warm_start is not None:
                    tracker.log_warm_start(warm_start.source, warm_start.to_dict())
            if resolved.resume:
                observer.restored(loop, resolved.run_dir)
            with live(sinks.table, options.live):
                loop.run()
            trials = loop.trials
            snapshots.save(loop)  # the sweep's end: a resume has nothing left to run
        errored = sum(1 for t in trials if t.outcome == "error")
        status = "FAILED" if trials and errored == len(trials) else "FINISHED"
    except KeyboardInterrupt:
        status = "KILLED"
        raise
    finally:
        summary = tracker.finish(status=status) if tracker is not None and tracking else None
    if summary is None:
        assert ranking is not None
        summary = ranking.summary()
    return finish_sweep(
        resolved,
        summary,
        plan=plan,
        wall_s=time.monotonic() - started,
        errored=errored,
        trials=len(trials),
        sinks=sinks,
        warm_start=warm_start,
    )
