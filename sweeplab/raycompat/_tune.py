"""Ray Tune internals: the trainable class, scheduler state, trial checkpoints and statistics.

Also Tune's flattening and merging of dicts (for the simulator), and the key Tune adds to a
repeated result, spelled out so the tracker needs no Ray import.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from sweeplab.raycompat._ledger import PrivateUse

__all__ = [
    "USES",
    "NewTrials",
    "forget_trial_statistics",
    "function_trainable_class",
    "median_rule_stops_hard",
    "pbt_exploit_iteration",
    "pbt_next_round",
    "pbt_with_exploit_hook",
    "replace_trial_restore_checkpoint",
    "rewire_restored_tuner",
    "trial_error_text",
    "trial_restore_checkpoint",
]

USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        "ray.tune.trainable",
        "wrap_function",
        ("train_func",),
        "the function trainable's class (a DeveloperAPI), subclassed for a `cleanup` that "
        "aborts the group; a function trainable has no public stop hook",
        purpose="essential",
        feature="a stopped trial's cleanup (its slot's run ended, its group aborted)",
    ),
    PrivateUse(
        "ray.tune.schedulers",
        "MedianStoppingRule._hard_stop",
        None,
        "whether the rule stops trials or pauses them, which decides actor reuse; the flag "
        "has no public accessor",
        purpose="essential",
        feature="the median stopping rule's scheduler traits",
    ),
    PrivateUse(
        "ray.tune.schedulers",
        "PopulationBasedTraining._exploit",
        ("tune_controller", "trial", "trial_to_clone"),
        "overridden to learn of each exploit (donor, iteration) and pin its checkpoint; PBT has "
        "no public exploit callback",
        purpose="essential",
        feature="PBT's exploit lineage and checkpoint copies",
    ),
    PrivateUse(
        "ray.tune.schedulers",
        "PopulationBasedTraining._trial_state",
        None,
        "PBT's per-trial state, read for the iteration an exploited trial restarts at",
        purpose="essential",
        feature="PBT's exploit lineage",
    ),
    PrivateUse(
        "ray.tune.schedulers.pbt",
        "_PBTTrialState.last_train_time",
        None,
        "that iteration, in PBT's own time unit",
        purpose="essential",
        feature="PBT's exploit lineage",
    ),
    PrivateUse(
        "ray.tune.schedulers",
        "PopulationBasedTraining._next_perturbation_sync",
        None,
        "the iteration synchronous PBT's next round waits for, read to learn that a result "
        "completed a round (its trial then trains on instead of pausing); PBT tells no one",
        purpose="speed",
        feature="synchronous PBT: the trial that completes a round trains on",
    ),
    PrivateUse(
        "ray.train._internal.checkpoint_manager",
        "_CheckpointManager._latest_checkpoint_result",
        None,
        "the checkpoint a paused trial restarts from, re-pointed to a copy of the donor's, "
        "which the donor may delete before the recipient starts; PBT itself writes it so",
        purpose="essential",
        feature="a PBT exploit restarts from a copy of the donor's checkpoint",
    ),
    PrivateUse(
        "ray.train._internal.session",
        "_TrainingResult.__init__",
        ("checkpoint", "metrics"),
        "the record that field holds",
        purpose="essential",
        feature="a PBT exploit restarts from a copy of the donor's checkpoint",
    ),
    PrivateUse(
        "ray.tune.result",
        "RESULT_DUPLICATE",
        None,
        "the key Tune adds to the result it repeats when a function trainable returns; it is "
        "no metric, and Tune's result keys have no public list (its value is "
        "`sweeplab.keys.TUNE_DUPLICATE_RESULT_KEY`)",
        purpose="essential",
        feature="Tune's repeated result is no metric",
    ),
    PrivateUse(
        "ray.tune.tuner",
        "Tuner._local_tuner",
        None,
        "a restored Tuner's own settings, unpickled from the experiment folder; a resumed "
        "sweep wires its fresh callbacks and exploit hook into them, since `Tuner.restore` "
        "takes neither and the pickled copies are inert",
        purpose="essential",
        feature="`--resume`",
    ),
    PrivateUse(
        "ray.tune.impl.tuner_internal",
        "TunerInternal._tune_config",
        None,
        "the restored TuneConfig, whose scheduler (PBT) gets the fresh exploit hook",
        purpose="essential",
        feature="`--resume`",
    ),
    PrivateUse(
        "ray.tune.trainable.metadata",
        "_TrainingRunMetadata.metric_analysis",
        None,
        "a trial's running statistics of each metric (min, max, averages of the last 5 and 10 "
        "results), emptied when the trial ends: sweeplab never reads them, and at 10,000 "
        "trials they held most of the driver's memory per trial; Tune has no switch for them",
        purpose="speed",
        feature="an ended trial's statistics forgotten",
    ),
    PrivateUse(
        "ray.tune.trainable.metadata",
        "_TrainingRunMetadata.metric_n_steps",
        None,
        "the windows of the last 5 and 10 values behind those averages, emptied with them",
        purpose="speed",
        feature="an ended trial's statistics forgotten",
    ),
)


def function_trainable_class(train_func: Callable[..., Any]) -> type:
    """The Tune trainable class Tune itself would make of the function `train_func`."""
    from ray.tune.trainable import wrap_function

    return wrap_function(train_func)


# --- Schedulers ----------------------------------------------------------------------------


def median_rule_stops_hard(rule: Any) -> bool:
    """Whether a `MedianStoppingRule` stops the trials it rules out (False: it pauses them).

    A rule without the flag is taken to pause.
    """
    return getattr(rule, "_hard_stop", False) is True


@functools.cache
def pbt_with_exploit_hook() -> type:
    """`PopulationBasedTraining` that calls `self.after_exploit(trial, donor)` after each exploit.

    Subclasses define `after_exploit`; the trial then already has its new config and the
    donor's checkpoint to restart from.
    """
    from ray.tune.schedulers import PopulationBasedTraining

    class ExploitHookedPBT(PopulationBasedTraining):
        def _exploit(self, tune_controller: Any, trial: Any, trial_to_clone: Any) -> None:
            super()._exploit(tune_controller, trial, trial_to_clone)
            self.after_exploit(trial, trial_to_clone)

        def after_exploit(self, trial: Any, donor: Any) -> None:
            pass

    return ExploitHookedPBT


def pbt_exploit_iteration(scheduler: Any, trial: Any) -> int:
    """The iteration (PBT's time unit) at which an exploited `trial` restarts."""
    return int(scheduler._trial_state[trial].last_train_time)


def pbt_next_round(scheduler: Any) -> float:
    """The iteration that synchronous PBT's next round waits for; it moves when a round ends."""
    return float(scheduler._next_perturbation_sync)


# --- A trial's restore checkpoint ----------------------------------------------------------


def trial_restore_checkpoint(trial: Any) -> Any | None:
    """The Tune checkpoint that `trial` restarts from, or None."""
    latest = trial.run_metadata.checkpoint_manager._latest_checkpoint_result
    return None if latest is None else latest.checkpoint


def replace_trial_restore_checkpoint(trial: Any, path: str) -> None:
    """Makes (paused) `trial` restart from the checkpoint at `path`, keeping its metrics."""
    from ray.train._internal.session import _TrainingResult
    from ray.tune import Checkpoint

    manager = trial.run_metadata.checkpoint_manager
    latest = manager._latest_checkpoint_result
    manager._latest_checkpoint_result = _TrainingResult(
        checkpoint=Checkpoint(path), metrics=latest.metrics if latest is not None else {}
    )


def rewire_restored_tuner(
    tuner: Any, *, callbacks: list[Any], on_exploit: Callable[..., None] | None
) -> None:
    """Gives a restored Tuner fresh Tune callbacks and its scheduler a fresh exploit hook.

    Tune pickles its run config (callbacks included) and its scheduler into the experiment
    folder; the sinks they fed hold threads and clients, so their restored copies are inert.
    A scheduler with an ``on_exploit`` hook (sweeplab's PBT) gets `on_exploit`.
    """
    internal = tuner._local_tuner
    internal.get_run_config().callbacks = list(callbacks)
    scheduler = internal._tune_config.scheduler
    if hasattr(scheduler, "set_exploit_hook"):
        scheduler.set_exploit_hook(on_exploit)


def trial_error_text(trial: Any) -> str | None:
    """The text of a Tune trial's error file (its traceback), or None when it has none."""
    from pathlib import Path

    try:
        if trial.error_file and Path(trial.error_file).exists():
            return Path(trial.error_file).read_text(errors="replace")
    except OSError:
        pass
    return None


# --- An ended trial's statistics ---------------------------------------------------------------


def forget_trial_statistics(trial: Any) -> None:
    """Empties Tune's running statistics of an ended trial's metrics.

    Tune keeps, for every number in a trial's results, its min, max, mean and the averages of
    its last 5 and 10 values, with the deques behind them, and their JSON for the experiment's
    snapshots: about 40 objects per metric, kept for every trial to the end of the sweep. Only
    Tune's `ExperimentAnalysis` reads them (its ``scope`` of a best trial), which sweeplab does
    not use. A trial that runs again (a resumed errored trial) starts them anew, as Tune does
    for a new metric.
    """
    metadata = getattr(trial, "run_metadata", None)
    if metadata is not None and hasattr(metadata, "metric_n_steps"):
        # Setting them through the object drops its cached JSON too.
        metadata.metric_analysis = {}
        metadata.metric_n_steps = {}


class NewTrials:
    """Which of the controller's trials a Tune callback has not seen, at each step.

    Tune appends each new trial to its list, so the new ones are those after the ones seen: a
    pass over the whole list at every step would be quadratic in the sweep's length.
    """

    def __init__(self) -> None:
        self._seen = 0

    def since_last(self, trials: list[Any]) -> list[Any]:
        """The trials of `trials` (the controller's list) added since the last call."""
        new = trials[self._seen :]
        self._seen = len(trials)
        return new
