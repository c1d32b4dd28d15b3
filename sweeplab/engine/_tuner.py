"""Building a sweep's Tune `Tuner`: new, or restored from an interrupted execution."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sweeplab.engine._driver import TrialSettings, make_trainable
from sweeplab.engine._resolved import ResolvedSweep
from sweeplab.engine._search import build_search
from sweeplab.engine._sinks import Sinks
from sweeplab.engine._trial_mode import TrialMode
from sweeplab.engine._warm import WarmStartPlan
from sweeplab.strategies import build_scheduler, tune_trial_limit

__all__ = ["build_tuner", "slot_names", "start_slots", "write_json"]


def build_tuner(
    resolved: ResolvedSweep,
    trial_settings: TrialSettings,
    sinks: Sinks,
    *,
    resume: bool,
    warm_start: WarmStartPlan | None,
) -> Any:
    """The Tuner of `resolved`, its Tune callbacks those of `sinks`.

    A resumed execution restores the interrupted one's Tuner (its trials, searcher and
    scheduler state) and wires the fresh sinks into it; a new one builds the scheduler and the
    search from the sweep's strategies.
    """
    from ray import tune

    from sweeplab.engine._divergence import DivergenceStopper

    sweep, run_dir = resolved.sweep, resolved.run_dir
    trainable = make_trainable(trial_settings)
    tune_path = run_dir / "tune"
    if resume and tune.Tuner.can_restore(str(tune_path)):
        from sweeplab.raycompat import rewire_restored_tuner

        tuner = tune.Tuner.restore(
            str(tune_path), trainable=trainable, resume_unfinished=True, resume_errored=True
        )
        rewire_restored_tuner(
            tuner,
            callbacks=list(sinks.tune_callbacks),
            on_exploit=sinks.events.on_trial_exploit,
        )
        return tuner
    scheduler = build_scheduler(
        sweep,
        sinks.events.on_trial_exploit,
        exploit_dir=str(run_dir / "pbt-exploits"),
        max_running=resolved.concurrency,
    )
    if trial_settings.slots and hasattr(scheduler, "set_pause_hook"):
        from sweeplab.engine.slots import ReleasePausedTrial

        # A paused trial's kept actor would hold its slot: the slot ends the trial's run.
        scheduler.set_pause_hook(ReleasePausedTrial(trial_settings.slots))
    traits = resolved.scheduler_traits
    search = build_search(sweep, warm_start)
    if warm_start is not None:
        write_json(run_dir / "warm_start.json", warm_start.to_dict())
    return tune.Tuner(
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
                waiting_holds_nothing=resolved.trial_mode.waiting_holds_nothing,
            ),
            time_budget_s=resolved.time_budget_s,
            reuse_actors=resolved.trial_mode.reuses_trial_actors,
        ),
        run_config=tune.RunConfig(
            name="tune",
            storage_path=str(run_dir),
            verbose=0,
            callbacks=list(sinks.tune_callbacks),
            stop=DivergenceStopper(resolved.metric),
            # An exploit restarts a trial from a donor's checkpoint, which must still exist.
            checkpoint_config=tune.CheckpointConfig(num_to_keep=4 if traits.exploits else 2),
            failure_config=tune.FailureConfig(max_failures=resolved.max_failures),
        ),
    )


def slot_names(resolved: ResolvedSweep) -> tuple[str, ...]:
    """The actor names of the sweep's warm trial slots, or () when it runs on none."""
    from sweeplab.engine.slots import slot_name

    if resolved.trial_mode is not TrialMode.WARM_SLOT:
        return ()
    prefix = f"sweeplab-{resolved.name}-{resolved.run_dir.name}"
    return tuple(slot_name(prefix, i) for i in range(resolved.concurrency))


def start_slots(resolved: ResolvedSweep, trial_settings: TrialSettings) -> list[Any]:
    """Starts the sweep's warm trial slots; none when it runs on none."""
    if not trial_settings.slots:
        return []
    from sweeplab.engine import slots

    return slots.start_slots(
        names=trial_settings.slots,
        train_func=trial_settings.train_func,
        num_workers=int(resolved.workers_per_trial),  # type: ignore[arg-type]
        use_gpu=trial_settings.use_gpu,
        resources_per_worker=trial_settings.resources_per_worker,
        placement_strategy=trial_settings.placement_strategy,
        storage=str(Path(resolved.train_storage, "slots")),
    )


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
