"""Wiring a sweep's sinks: the tracker, the live table, the sweep callbacks, the stall watchdog
and the orphaned-group reaper.

Each sink is made once per execution of a sweep, in the process that runs (or resumes) it; the
trial loop's observer tells them of each trial event (`sweeplab.engine._loop_sweep`).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING

from sweeplab.engine._callbacks import SweepCallback
from sweeplab.engine._display import LiveTable
from sweeplab.engine._resolved import ResolvedSweep

if TYPE_CHECKING:
    from sweeplab.engine._orphans import OrphanGroupReaper
    from sweeplab.engine._runner import SweepOptions
    from sweeplab.engine._watchdog import StallWatchdog
    from sweeplab.tracking import SweepTracker

__all__ = ["Sinks", "live", "tracker_for", "wire_sinks"]


def tracker_for(resolved: ResolvedSweep) -> SweepTracker:
    """The MLflow tracker of one execution of a sweep, as the engine records it.

    The resolved settings become the parent run's params, and the run folder holds the parent
    run id and ``best_config.json``. A multi-objective sweep's objectives, constraints and pick
    rule come from its `Sweep`.
    """
    from sweeplab.tracking import SweepTracker, writer_for

    return SweepTracker(
        tracking_uri=resolved.tracking_uri,
        sweep_name=resolved.name,
        storage_dir=resolved.run_dir,
        metric=resolved.metric,
        mode=resolved.mode,
        rank_by=resolved.rank_by,
        settings=resolved.recorded_settings(),
        spec_path=resolved.spec_path,
        space_yaml=resolved.sweep.space.to_yaml(),
        config_decoder=resolved.config_decoder(),
        scheduler_name=resolved.scheduler,
        max_iterations=resolved.max_iterations,
        resume=resolved.resume,
        register_model=resolved.register_model,
        objectives=resolved.sweep.objectives,
        constraints=resolved.sweep.constraints,
        pick=resolved.sweep.pick,
        writer=writer_for(resolved.num_trials),
    )


@dataclasses.dataclass(frozen=True)
class Sinks:
    """What watches one execution of a sweep.

    Attributes:
        table: The live table (a sweep callback).
        tracker: The MLflow tracker (the caller starts it); None for an untracked sweep.
        callbacks: The sweep callbacks, the live table first, then those of ``SweepOptions``.
        watchdog: The stall watchdog (`StallWatchdog`).
        reaper: What removes placement groups orphaned by a dead trainer group's controller.
    """

    table: LiveTable
    tracker: SweepTracker | None
    callbacks: tuple[SweepCallback, ...]
    watchdog: StallWatchdog
    reaper: OrphanGroupReaper


def wire_sinks(resolved: ResolvedSweep, options: SweepOptions) -> Sinks:
    """Makes the sinks of `resolved`, as `options` asks: a tracker if ``options.track``, and
    ``options.callbacks`` after the live table.

    The tracker is not started: the caller starts it (`SweepTracker.start`) before the sweep
    runs, and finishes it after.

    The stall watchdog (`StallWatchdog`): ``options.stall_timeout_s`` is its fixed limit (None:
    adaptive), and with ``options.fail_on_stall`` a stall ends the sweep.
    """
    track, callbacks = options.track, options.callbacks
    stall_timeout_s, fail_on_stall = options.stall_timeout_s, options.fail_on_stall
    from sweeplab.engine._orphans import OrphanGroupReaper
    from sweeplab.engine._stall import StallClock
    from sweeplab.engine._watchdog import StallWatchdog

    tracker = tracker_for(resolved) if track else None
    table = LiveTable(
        metric=resolved.metric,
        mode=resolved.mode,
        total_trials=resolved.total_trials,
        max_iterations=resolved.max_iterations,
        objectives=resolved.sweep.objectives,
        constraints=resolved.sweep.constraints,
    )
    return Sinks(
        table=table,
        tracker=tracker,
        callbacks=(table, *callbacks),
        watchdog=StallWatchdog(
            StallClock(timeout_s=stall_timeout_s),
            report_path=resolved.run_dir / "stall.txt",
            log_path=resolved.ray_log,
            say=_say,
            fail=fail_on_stall,
        ),
        reaper=OrphanGroupReaper(),
    )


def _say(line: str) -> None:
    """Prints a line to stderr, above the live table when it shows."""
    import sys

    print(f"sweeplab: {line}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def live(table: LiveTable, enabled: bool) -> Iterator[None]:
    """Shows the live table on stderr while the sweep runs, when `enabled`."""
    if not enabled:
        yield
        return
    from rich.live import Live

    from sweeplab.engine._display import make_console

    console = make_console(stderr=True)
    with Live(table, console=console, refresh_per_second=2, transient=False):
        yield
    console.print()
