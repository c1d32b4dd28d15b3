"""Running a sweep: plan, start Ray, wire the sinks, build the Tuner, fit, rank.

Each step has its module: the sinks (`_sinks`), the Tuner (`_tuner`), the outcome (`_outcome`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Sequence
from math import inf
from pathlib import Path
from typing import Any

from sweeplab.engine._address import check_address
from sweeplab.engine._callbacks import SweepCallback
from sweeplab.engine._driver import TrialSettings
from sweeplab.engine._loop_state import STATE_FILE
from sweeplab.engine._loop_sweep import ENGINES, run_on_loop
from sweeplab.engine._outcome import SweepOutcome, finish_sweep, rank_untracked
from sweeplab.engine._plan import ResourcePlan, local_nodes, plan_resources
from sweeplab.engine._resolved import ResolvedSweep
from sweeplab.engine._session import (
    DEFAULT_STORAGE,
    cluster_nodes,
    pickle_spec_by_value,
    quiet_libraries,
    ray_session,
    start_local_ray,
    tune_logs_without_tensorboard,
)
from sweeplab.engine._sinks import live, wire_sinks
from sweeplab.engine._tuner import build_tuner, slot_names, start_slots, write_json
from sweeplab.engine._warm import WarmStartPlan, plan_warm_start
from sweeplab.errors import SpecError, SweeplabError
from sweeplab.spec import Sweep

__all__ = ["DEFAULT_STORAGE", "SweepOptions", "SweepOutcome", "run_sweep", "start_local_ray"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class SweepOptions:
    """How to run a sweep: the CLI's flags, and the callbacks that watch it.

    Callbacks belong to one run of a sweep, not to the `Sweep`: a spec file declares what to
    search and stays the same whoever watches it.

    Attributes:
        callbacks: :class:`SweepCallback` objects told of each trial's events and of the
            sweep's end, after sweeplab's own live table and tracker.
        stall_timeout_s: How long no trial may report, start or end before the sweep says
            what it waits for (``stall.txt`` in the run folder has the details); None: three
            times the longest such silence seen so far, at least 120 s.
        fail_on_stall: Whether such a stall ends the sweep with `SweepStalled` (the CLI
            exits 1) instead of waiting on.
        engine: What runs the trials: ``"loop"``, sweeplab's own trial loop, or ``"tune"``,
            Ray Tune's controller (see ``docs/trials.md``). None (the default): the loop,
            except for a configured PBT or PB2 scheduler object, which only Tune runs; a
            resumed sweep runs on the engine that ran it.
    """

    spec_path: Path | None = None
    name: str | None = None
    storage: Path = Path(DEFAULT_STORAGE)
    tracking_uri: str | None = None
    address: str | None = None
    num_trials: int | None = None
    warm_start: str | None = None
    resume: bool = False
    live: bool = True
    track: bool = True
    callbacks: Sequence[SweepCallback] = ()
    stall_timeout_s: float | None = None
    fail_on_stall: bool = False
    engine: str | None = None

    def __post_init__(self) -> None:
        if self.engine is not None and self.engine not in ENGINES:
            raise SpecError(
                f"SweepOptions.engine must be one of {', '.join(map(repr, ENGINES))}, "
                f"but got {self.engine!r}."
            )
        timeout = self.stall_timeout_s
        number = isinstance(timeout, int | float) and not isinstance(timeout, bool)
        if timeout is not None and not (number and 0 < timeout < inf):
            raise SpecError(
                "SweepOptions.stall_timeout_s must be a number of seconds > 0, "
                f"but got {timeout!r}."
            )


def apply_options(sweep: Sweep, options: SweepOptions) -> Sweep:
    """The sweep with the CLI's overrides applied (validated again)."""
    changes: dict[str, Any] = {}
    if options.name is not None:
        changes["name"] = options.name
    if options.num_trials is not None:
        changes["num_trials"] = options.num_trials
    if options.warm_start is not None:
        changes["warm_start"] = options.warm_start
    return sweep.replace(**changes) if changes else sweep


# What each engine resumes from: Tune's experiment folder, or the loop's snapshot.
_RESUME_MARKS = {"tune": "tune", "loop": STATE_FILE}


def latest_resumable(sweep_dir: Path, engine: str | None = None) -> tuple[Path, str] | None:
    """The latest run folder of a sweep that an engine can resume (`engine`'s only, if given),
    and that engine; None if there is none."""
    marks = {name: mark for name, mark in _RESUME_MARKS.items() if engine in (None, name)}
    marked = sorted(
        (p, name)
        for name, mark in marks.items()
        for p in sweep_dir.glob("run-*")
        if (p / mark).exists()
    )
    return marked[-1] if marked else None


def _execution_dir(sweep_dir: Path, resume: bool, engine: str) -> Path:
    if resume:
        found = latest_resumable(sweep_dir, engine)
        if found is None:
            raise SpecError(
                f"--resume: {sweep_dir} holds no interrupted sweep to resume "
                "(run it once without --resume)."
            )
        return found[0]
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    return sweep_dir / f"run-{stamp}"


def choose_engine(sweep: Sweep, options: SweepOptions) -> str:
    """The engine that runs `sweep` (with `options` applied): the one named, else the loop, and
    Tune for a configured PBT or PB2 scheduler object (it exploits through Tune's controller;
    ``scheduler="pbt"`` runs on the loop). Resumed, it is the engine of the latest run folder
    that either can resume (so a sweep started on Tune resumes on Tune).

    Raises:
        SpecError: The loop named for a configured PBT or PB2 object.
    """
    from sweeplab.loop import simulation_rule_break

    engine = options.engine
    if engine is None and options.resume:
        found = latest_resumable(options.storage.expanduser().resolve() / sweep.name)
        engine = None if found is None else found[1]
    refused = simulation_rule_break(sweep, planned=True)  # the engine plans a warm start
    if engine is None:
        engine = "loop" if refused is None else "tune"
    if engine == "loop" and refused is not None:
        raise refused.error()
    return engine


def _prepare_storage(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".sweeplab-write-check"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise SweeplabError(
            f"storage folder {path} is not writable: {exc.strerror or exc}."
        ) from None


def run_sweep(
    sweep: Sweep, options: SweepOptions | None = None, *, warm_start: WarmStartPlan | None = None
) -> SweepOutcome:
    """Runs `sweep` and returns its outcome.

    Args:
        sweep: The sweep.
        options: How to run it.
        warm_start: The configs to try first, as `plan_warm_start` made them for the sweep with
            `options` applied (the CLI passes the plan it printed); planned here when None.

    Raises:
        SpecError / ResourceError: Bad arguments, or a trial that can never fit; nothing started.
        SweeplabError: The storage folder is not writable.
        AddressError: No Ray cluster answers at ``options.address``; nothing written.
        TrackingError: MLflow cannot use ``options.tracking_uri`` (an unknown scheme, a server
            that does not answer); nothing started or written.
    """
    options = options or SweepOptions()
    if options.address is not None:
        check_address(options.address)  # before anything is written
    if options.track:
        from sweeplab.tracking import check_tracking_uri

        check_tracking_uri(options.tracking_uri)  # a typo or a server that is down: exit 2
    sweep = apply_options(sweep, options)
    engine = choose_engine(sweep, options)
    if warm_start is None and not options.resume:  # a resumed searcher keeps its own state
        warm_start = plan_warm_start(sweep, options.tracking_uri)
    sweep_dir = options.storage.expanduser().resolve() / sweep.name
    remote = options.address is not None
    plan = None if remote else plan_resources(sweep, local_nodes())
    run_dir = _execution_dir(sweep_dir, options.resume, engine)
    _prepare_storage(run_dir)
    started = time.monotonic()

    quiet_libraries()
    pickle_spec_by_value(sweep)
    spec_dir = options.spec_path.resolve().parent if options.spec_path else None
    log_path = run_dir / "ray.log"
    if options.track:
        from sweeplab.tracking import open_store_in_background

        # MLflow's import and the store's opening run while Ray starts; the tracker starts
        # once the slots are up (see `_run_on_ray`).
        open_store_in_background(options.tracking_uri)
    with ray_session(address=options.address, spec_dir=spec_dir, log_path=log_path) as started_here:
        if plan is None or not started_here:
            plan = plan_resources(sweep, cluster_nodes())
        resolved = ResolvedSweep.resolve(sweep, options, plan, run_dir)
        if engine == "loop":
            return run_on_loop(resolved, options, plan, started, warm_start)
        return _run_on_ray(resolved, options, plan, started, warm_start)


def _run_on_ray(
    resolved: ResolvedSweep,
    options: SweepOptions,
    plan: ResourcePlan,
    started: float,
    warm_start: WarmStartPlan | None = None,
) -> SweepOutcome:
    sinks = wire_sinks(resolved, options)
    tracker = sinks.tracker
    status = "FAILED"
    hosts: list[Any] = []
    tracking = False
    try:
        trial_settings = TrialSettings.of(resolved, slots=slot_names(resolved))
        tuner = build_tuner(
            resolved, trial_settings, sinks, resume=options.resume, warm_start=warm_start
        )
        write_json(resolved.run_dir / "sweep.json", resolved.sweep_json())
        hosts = start_slots(resolved, trial_settings)
        if tracker is not None:
            # Started last: its store has been opening in the background since before Ray.
            # The parent run starts when the sweep did.
            tracker.start(started_at=time.time() - (time.monotonic() - started))
            tracking = True
            if warm_start is not None:
                tracker.log_warm_start(warm_start.source, warm_start.to_dict())
        with (
            live(sinks.table, options.live),
            tune_logs_without_tensorboard(),
        ):
            results = tuner.fit()
        errored = sum(1 for r in results if r.error is not None)
        trials = len(results)
        status = "FAILED" if errored == trials else "FINISHED"
    except KeyboardInterrupt:
        status = "KILLED"
        raise
    finally:
        if hosts:
            from sweeplab.engine.slots import close_slots

            close_slots(hosts)
        summary = tracker.finish(status=status) if tracker is not None and tracking else None
    if summary is None:
        summary = rank_untracked(resolved, results)
    return finish_sweep(
        resolved,
        summary,
        plan=plan,
        wall_s=time.monotonic() - started,
        errored=errored,
        trials=trials,
        sinks=sinks,
        warm_start=warm_start,
    )
