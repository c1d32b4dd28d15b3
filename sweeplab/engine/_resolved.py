"""One sweep execution's settings, resolved once from the `Sweep`, its options and its plan."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeplab.engine._trial_mode import TrialMode
from sweeplab.spec import Sweep
from sweeplab.strategies import SchedulerTraits, scheduler_traits

if TYPE_CHECKING:
    from sweeplab.engine._plan import ResourcePlan
    from sweeplab.engine._runner import SweepOptions

__all__ = ["ResolvedSweep"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ResolvedSweep:
    """What one execution of a sweep runs with, built once by :meth:`resolve`.

    The trial driver, the tracker, ``sweep.json`` and the CLI all read this object, so a
    setting is resolved (an option applied, a name derived, the concurrency planned) in one
    place and recorded the same way everywhere.

    Attributes:
        sweep: The `Sweep` with the options applied: its training function, space and
            configured searcher or scheduler objects, which are code, not settings.
        spec_path: The spec file as given, or None for a sweep built in code.
        searcher, scheduler: The searcher's and scheduler's names.
        worker_resources: What one worker of a trial's group reserves.
        trial_mode: Where each trial's training function runs (in-process, warm slot, or a
            group per trial): decided here, once, and read by the runner, the trial driver
            and ``preview``.
        scheduler_traits: Whether the scheduler pauses or exploits trials, from the strategy
            registry or as the sweep declares: read by the Tuner's build and the runner.
        concurrency: Trials at once, as planned from the cluster's resources.
        total_trials: Trials the searcher will start.
        sweep_dir: The sweep's folder in the storage; ``best_config.json`` of its latest run.
        run_dir: This execution's folder (a resumed sweep's is the interrupted one's).
        tracking_uri: The MLflow tracking URI asked for; None: MLflow's own default.
        resume: Whether this execution continues an interrupted one.
    """

    sweep: Sweep = dataclasses.field(repr=False, compare=False)
    name: str
    spec_path: Path | None
    metric: str
    mode: str
    rank_by: str
    searcher: str
    scheduler: str
    num_trials: int
    max_iterations: int
    workers_per_trial: int | tuple[int, int]
    use_gpu: bool
    cpus_per_worker: float
    worker_resources: Mapping[str, float]
    placement_strategy: str
    metrics_from: str
    checkpoints_to_keep: int
    max_failures: int
    time_budget_s: float | None
    seed: int | None
    register_model: str | None
    reuse_groups: bool
    trial_mode: TrialMode
    scheduler_traits: SchedulerTraits
    concurrency: int
    total_trials: int
    sweep_dir: Path
    run_dir: Path
    tracking_uri: str | None
    resume: bool

    @classmethod
    def resolve(
        cls, sweep: Sweep, options: SweepOptions, plan: ResourcePlan, run_dir: Path
    ) -> ResolvedSweep:
        """The settings of `sweep` (options already applied) run with `options` and `plan`."""
        return cls(
            sweep=sweep,
            name=sweep.name,
            spec_path=options.spec_path,
            metric=sweep.metric,
            mode=sweep.mode,
            rank_by=sweep.rank_by,
            searcher=sweep.searcher_name,
            scheduler=sweep.scheduler_name,
            num_trials=sweep.num_trials,
            max_iterations=sweep.max_iterations,
            workers_per_trial=sweep.workers_per_trial,
            use_gpu=sweep.use_gpu,
            cpus_per_worker=sweep.cpus_per_worker,
            worker_resources=sweep.worker_resources,
            placement_strategy=sweep.placement_strategy,
            metrics_from=sweep.metrics_from,
            checkpoints_to_keep=sweep.checkpoints_to_keep,
            max_failures=sweep.max_failures,
            time_budget_s=sweep.time_budget_s,
            seed=sweep.seed,
            register_model=sweep.register_model,
            reuse_groups=sweep.reuse_groups,
            trial_mode=cls.trial_mode_of(sweep),
            scheduler_traits=scheduler_traits(sweep.scheduler, declared=sweep.scheduler_traits),
            concurrency=plan.concurrency,
            total_trials=plan.total_trials,
            sweep_dir=run_dir.parent,
            run_dir=run_dir,
            tracking_uri=options.tracking_uri,
            resume=options.resume,
        )

    @staticmethod
    def trial_mode_of(sweep: Sweep) -> TrialMode:
        """The trial mode of `sweep`: the one place it is decided (``preview`` shows it)."""
        return TrialMode.decide(
            workers_per_trial=sweep.workers_per_trial, reuse_groups=sweep.reuse_groups
        )

    @property
    def train_storage(self) -> str:
        """Where the trials' Ray Train runs keep their checkpoints."""
        return str(self.run_dir / "train")

    @property
    def ray_log(self) -> Path:
        return self.run_dir / "ray.log"

    def config_decoder(self) -> Callable[[dict[str, Any]], dict[str, Any]]:
        """Turns a Tune (backend-shaped) config into the user's nested config.

        A closure over the space alone: it travels to every trial actor.
        """
        from sweeplab.space import decode_config

        space = self.sweep.space
        return lambda config: decode_config(space, config)

    def recorded_settings(self) -> dict[str, Any]:
        """The settings as ``sweep.json`` and the parent run's params record them."""
        return {
            "searcher": self.searcher,
            "scheduler": self.scheduler,
            "metric": self.metric,
            "mode": self.mode,
            "num_trials": self.num_trials,
            "max_iterations": self.max_iterations,
            "workers_per_trial": self.workers_per_trial,
            "use_gpu": self.use_gpu,
            "cpus_per_worker": self.cpus_per_worker,
            "placement_strategy": self.placement_strategy,
            "metrics_from": self.metrics_from,
            "rank_by": self.rank_by,
            "checkpoints_to_keep": self.checkpoints_to_keep,
            "max_failures": self.max_failures,
            "seed": self.seed,
            "concurrency": self.concurrency,
        }

    def sweep_json(self) -> dict[str, Any]:
        """The document written to the run folder's ``sweep.json``."""
        return {
            "name": self.name,
            "spec": str(self.spec_path) if self.spec_path else None,
            "settings": self.recorded_settings(),
            "ray_log": str(self.ray_log),
            "python": sys.version.split()[0],
        }
