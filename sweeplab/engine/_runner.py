"""Running a sweep: plan, start Ray, build the Tuner (or restore it), track, rank."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from sweeplab.engine._callbacks import SweepCallback
from sweeplab.engine._display import LiveTable
from sweeplab.engine._driver import TrialSettings, make_trainable
from sweeplab.engine._plan import ResourcePlan, local_nodes, plan_resources
from sweeplab.engine._resolved import ResolvedSweep
from sweeplab.engine._session import (
    DEFAULT_STORAGE,
    cluster_nodes,
    pickle_spec_by_value,
    quiet_libraries,
    ray_session,
    start_local_ray,
)
from sweeplab.engine._strategy import (
    build_scheduler,
    build_search,
    scheduler_traits,
    tune_trial_limit,
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


@dataclasses.dataclass(frozen=True)
class SweepOutcome:
    """What a finished sweep left behind.

    `sweep` is the `Sweep` with the options applied; `resolved` the settings it ran with.
    """

    sweep: Sweep
    resolved: ResolvedSweep
    storage_dir: Path
    best: dict[str, Any] | None
    summary: Any
    plan: ResourcePlan
    wall_s: float
    errored: int
    trials: int
    diverged: int = 0
    warm_start: WarmStartPlan | None = None
    warnings: tuple[str, ...] = ()


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


def _execution_dir(sweep_dir: Path, resume: bool) -> Path:
    if resume:
        candidates = sorted(p for p in sweep_dir.glob("run-*") if (p / "tune").is_dir())
        if not candidates:
            raise SpecError(
                f"--resume: {sweep_dir} holds no interrupted sweep to resume "
                "(run it once without --resume)."
            )
        return candidates[-1]
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    return sweep_dir / f"run-{stamp}"


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
    """
    options = options or SweepOptions()
    sweep = apply_options(sweep, options)
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
    with ray_session(address=options.address, spec_dir=spec_dir, log_path=log_path) as started_here:
        if plan is None or not started_here:
            plan = plan_resources(sweep, cluster_nodes())
        resolved = ResolvedSweep.resolve(sweep, options, plan, run_dir)
        return _run_on_ray(resolved, options, plan, started, warm_start)


def _run_on_ray(
    resolved: ResolvedSweep,
    options: SweepOptions,
    plan: ResourcePlan,
    started: float,
    warm_start: WarmStartPlan | None = None,
) -> SweepOutcome:
    from ray import tune

    from sweeplab.engine._divergence import DivergenceStopper

    sweep, run_dir = resolved.sweep, resolved.run_dir
    decode = resolved.config_decoder()
    tracker = None
    if options.track:
        from sweeplab.tracking import SweepTracker

        tracker = SweepTracker.for_sweep(resolved)
        tracker.start()
        if warm_start is not None:
            tracker.log_warm_start(warm_start.source, warm_start.to_dict())

    trial_settings = TrialSettings.of(resolved, slots=_slot_names(resolved))
    scheduler = build_scheduler(
        sweep,
        _exploit_hook,
        exploit_dir=str(run_dir / "pbt-exploits"),
        max_running=resolved.concurrency,
        keep_idle_actors=trial_settings.in_process,
    )
    traits = scheduler_traits(scheduler)
    trainable = make_trainable(trial_settings)
    table = LiveTable(
        metric=resolved.metric,
        mode=resolved.mode,
        total_trials=resolved.total_trials,
        max_iterations=resolved.max_iterations,
    )
    from sweeplab.engine._orphans import OrphanGroupReaper
    from sweeplab.engine._relay import SINKS, RelayCallback
    from sweeplab.engine._tune_events import TuneEvents

    callbacks: list[SweepCallback] = [table]
    if tracker is not None:
        from sweeplab.tracking._callback import TrackerEvents

        callbacks.append(TrackerEvents(tracker))
    callbacks.extend(options.callbacks)
    SINKS.clear()
    SINKS.append(
        TuneEvents(
            callbacks,
            max_iterations=resolved.max_iterations,
            decode=decode,
            metric=resolved.metric,
        )
    )
    SINKS.append(OrphanGroupReaper())
    if tracker is not None:
        SINKS.append(tracker)  # PBT's exploits reach it through `_exploit_hook`
    tune_path = run_dir / "tune"
    if options.resume and tune.Tuner.can_restore(str(tune_path)):
        tuner = tune.Tuner.restore(
            str(tune_path), trainable=trainable, resume_unfinished=True, resume_errored=True
        )
    else:
        from sweeplab.engine._slots import waiting_trials_hold_nothing

        search = build_search(sweep, warm_start)
        if warm_start is not None:
            _write_json(run_dir / "warm_start.json", warm_start.to_dict())
        tuner = tune.Tuner(
            trainable,
            param_space=search.param_space,
            tune_config=tune.TuneConfig(
                metric=resolved.metric,
                mode=resolved.mode,
                search_alg=search.search_alg,
                scheduler=scheduler,
                num_samples=search.num_samples,
                max_concurrent_trials=tune_trial_limit(
                    traits,
                    concurrency=resolved.concurrency,
                    total_trials=resolved.total_trials,
                    waiting_holds_nothing=waiting_trials_hold_nothing(
                        reuse_groups=resolved.reuse_groups,
                        workers_per_trial=resolved.workers_per_trial,
                    ),
                ),
                time_budget_s=resolved.time_budget_s,
                reuse_actors=_reuse_actors(trial_settings),
            ),
            run_config=tune.RunConfig(
                name="tune",
                storage_path=str(run_dir),
                verbose=0,
                callbacks=[RelayCallback()],
                stop=DivergenceStopper(resolved.metric),
                # An exploit restarts a trial from a donor's checkpoint, which must still exist.
                checkpoint_config=tune.CheckpointConfig(num_to_keep=4 if traits.exploits else 2),
                failure_config=tune.FailureConfig(max_failures=resolved.max_failures),
            ),
        )
    _write_json(run_dir / "sweep.json", resolved.sweep_json())
    status = "FAILED"
    hosts = _start_slots(resolved, trial_settings) if trial_settings.slots else []
    try:
        with _live(table, options.live):
            results = tuner.fit()
        errored = sum(1 for r in results if r.error is not None)
        status = "FAILED" if errored == len(results) else "FINISHED"
    except KeyboardInterrupt:
        status = "KILLED"
        raise
    finally:
        if hosts:
            from sweeplab.engine._slots import close_slots

            close_slots(hosts)
        summary = tracker.finish(status=status) if tracker is not None else None
        SINKS.clear()
    from sweeplab.tracking import best_config_document, rank_tune_results

    if summary is None:  # untracked: the same ranking, from Tune's own record of the trials
        summary = rank_tune_results(
            results,
            metric=resolved.metric,
            mode=resolved.mode,
            rank_by=resolved.rank_by,
            config_decoder=decode,
            max_iterations=resolved.max_iterations,
        )
    best = best_config_document(summary, resolved.name)
    for folder in (run_dir, resolved.sweep_dir):
        (folder / "best_config.json").write_text(json.dumps(best, indent=2))
    outcome = SweepOutcome(
        sweep=sweep,
        resolved=resolved,
        storage_dir=run_dir,
        best=best,
        summary=summary,
        plan=plan,
        wall_s=time.monotonic() - started,
        errored=errored,
        trials=len(results),
        diverged=sum(1 for trial in summary.trials if trial.status == "diverged"),
        warm_start=warm_start,
        warnings=tuple(w for w in [table.data_wait_warning()] if w),
    )
    for callback in callbacks:
        callback.on_sweep_end(outcome)
    return outcome


def _reuse_actors(trial_settings: TrialSettings) -> bool:
    """Whether Tune reuses trial actors.

    Starting a trial actor costs about a second (a process, Ray's and the spec's imports);
    a reused one starts the next trial, or a paused trial's next segment, in milliseconds.
    One-worker trials run in their actor, and a slot's client holds no resources: both are
    reused under every scheduler (`ResumeWhenStalled` resumes no more paused trials than run
    at once, so a cached actor always has a trial to take it). A per-trial group's driver is
    not reused: its group is aborted when the trial stops, which a reused actor would skip.
    """
    return bool(trial_settings.slots) or trial_settings.in_process


def _slot_names(resolved: ResolvedSweep) -> tuple[str, ...]:
    """The actor names of the sweep's warm trial slots, or () for a group per trial."""
    from sweeplab.engine._slots import slot_name, uses_slots

    if not uses_slots(
        reuse_groups=resolved.reuse_groups, workers_per_trial=resolved.workers_per_trial
    ):
        return ()
    prefix = f"sweeplab-{resolved.name}-{resolved.run_dir.name}"
    return tuple(slot_name(prefix, i) for i in range(resolved.concurrency))


def _start_slots(resolved: ResolvedSweep, trial_settings: TrialSettings) -> list[Any]:
    from sweeplab.engine._slots import start_slots

    return start_slots(
        names=trial_settings.slots,
        train_func=trial_settings.train_func,
        num_workers=int(resolved.workers_per_trial),  # type: ignore[arg-type]
        use_gpu=trial_settings.use_gpu,
        resources_per_worker=trial_settings.resources_per_worker,
        placement_strategy=trial_settings.placement_strategy,
        storage=str(Path(resolved.train_storage, "slots")),
    )


def _exploit_hook(trial_id: str, donor_id: str, iteration: int, config: dict[str, Any]) -> None:
    from sweeplab.engine._relay import SINKS

    for sink in list(SINKS):
        note = getattr(sink, "note_exploit", None)
        if note is not None:
            note(trial_id, donor_id, iteration, config)


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")


@contextlib.contextmanager
def _live(table: LiveTable, enabled: bool) -> Iterator[None]:
    if not enabled:
        yield
        return
    from rich.console import Console
    from rich.live import Live

    console = Console(stderr=True)
    with Live(table, console=console, refresh_per_second=2, transient=False):
        yield
    console.print()
