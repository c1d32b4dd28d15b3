"""Running a sweep: check it, plan its resources, start Ray, run it on the trial loop, rank.

Each step has its module: the sinks (`_sinks`), the loop's run (`_loop_sweep`), the outcome
(`_outcome`).
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
from sweeplab.engine._loop_state import STATE_FILE
from sweeplab.engine._loop_sweep import run_on_loop
from sweeplab.engine._outcome import SweepOutcome
from sweeplab.engine._plan import local_nodes, plan_resources
from sweeplab.engine._resolved import ResolvedSweep
from sweeplab.engine._session import (
    DEFAULT_STORAGE,
    cluster_nodes,
    pickle_spec_by_value,
    quiet_libraries,
    ray_session,
    start_local_ray,
)
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

    def __post_init__(self) -> None:
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


# A run folder that Ray Tune's controller ran (sweeplab 0.x before the trial loop): it holds
# Tune's experiment state, which this version cannot resume.
_TUNE_FOLDER = "tune"


def latest_resumable(sweep_dir: Path) -> Path | None:
    """The latest run folder of a sweep that the trial loop can resume; None if there is none."""
    marked = sorted(p for p in sweep_dir.glob("run-*") if (p / STATE_FILE).exists())
    return marked[-1] if marked else None


def _execution_dir(sweep_dir: Path, resume: bool) -> Path:
    if resume:
        found = latest_resumable(sweep_dir)
        if found is None:
            raise SpecError(_nothing_to_resume(sweep_dir))
        return found
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    return sweep_dir / f"run-{stamp}"


def _nothing_to_resume(sweep_dir: Path) -> str:
    runs = sorted(sweep_dir.glob("run-*"))
    if runs and (runs[-1] / _TUNE_FOLDER).is_dir():
        return (
            f"--resume: {runs[-1]} was run on Ray Tune's controller by an earlier sweeplab, "
            "and this version resumes only its own trial loop's sweeps "
            "(run the sweep again without --resume)."
        )
    return (
        f"--resume: {sweep_dir} holds no interrupted sweep to resume "
        "(run it once without --resume)."
    )


def check_runnable(sweep: Sweep, options: SweepOptions) -> None:
    """Refuses, before anything starts, a sweep (with `options` applied) that the trial loop
    cannot run: a configured PBT or PB2 scheduler object (it exploits through Ray Tune's
    controller; ``scheduler="pbt"`` is the loop's PBT), or ``--resume`` with nothing to resume.

    Raises:
        SpecError: With one line that says which and what to do instead.
    """
    from sweeplab.loop import simulation_rule_break

    refused = simulation_rule_break(sweep, planned=True)  # the engine plans a warm start
    if refused is not None:
        raise refused.error()
    if options.resume:
        _execution_dir(options.storage.expanduser().resolve() / sweep.name, resume=True)


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
    check_runnable(sweep, options)
    if warm_start is None and not options.resume:  # a resumed searcher keeps its own state
        warm_start = plan_warm_start(sweep, options.tracking_uri)
    sweep_dir = options.storage.expanduser().resolve() / sweep.name
    remote = options.address is not None
    plan = None if remote else plan_resources(sweep, local_nodes())
    run_dir = _execution_dir(sweep_dir, options.resume)
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
        return run_on_loop(resolved, options, plan, started, warm_start)
