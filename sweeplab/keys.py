"""The names sweeplab writes beside the user's data: result keys and MLflow tags.

A trial's results carry, beside the user's metrics, the keys below (``*_KEY``), some set by
sweeplab and some by Tune. Each sweep's MLflow runs carry sweeplab's tags (``*_TAG``), whose
values include a run's role and a trial's status. This module is the one place they are
spelled: the engine writes them, the tracker records them, the reader and the report read them
back, and recorded sweeps depend on each value staying as it is.

It imports nothing, so every layer may read it.
"""

from __future__ import annotations

__all__ = [
    "BEST_METRIC_TAG",
    "BEST_TAG",
    "BEST_TRIAL_ID_TAG",
    "CHECKPOINT_PATH_KEY",
    "CONFIG_TAG",
    "CONSTRAINTS_TAG",
    "DATA_WAIT_KEY",
    "ERROR_TAG",
    "FRONT_ARTIFACT",
    "FRONT_INFEASIBLE",
    "FRONT_TAG",
    "GROUP_RESTARTS_KEY",
    "HYPERVOLUME_METRIC",
    "ITERATION_KEY",
    "METRIC_TAG",
    "OBJECTIVES_TAG",
    "PBT_DONOR_TAG",
    "PBT_LINEAGE_TAG",
    "RANK_BY_TAG",
    "RANK_TAG",
    "RESTARTS_TAG",
    "ROLE_SWEEP",
    "ROLE_TAG",
    "ROLE_TRIAL",
    "STATUS_DIVERGED",
    "STATUS_ERRORED",
    "STATUS_FINISHED",
    "STATUS_RUNNING",
    "STATUS_STOPPED_EARLY",
    "STATUS_TAG",
    "STOPPED_AT_ITERATION_TAG",
    "STOPPED_BY_TAG",
    "SWEEP_TAG",
    "TAG_PREFIX",
    "TRIALS_TAG",
    "TRIAL_ID_TAG",
    "TUNE_DUPLICATE_RESULT_KEY",
    "WARM_START_TAG",
    "WORKERS_KEY",
]

# --- Result keys: what a trial reports beyond the user's metrics ---

# The size of the trainer group that made the report (1 for a trial without a group).
WORKERS_KEY = "sweeplab_workers"
# Restarts of the trial's trainer group that Ray Train made and Tune never saw.
GROUP_RESTARTS_KEY = "sweeplab_group_restarts"
# The fraction of the time since the previous report spent waiting for the data loader (rank
# 0's, or the mean over the workers with `metrics_from="mean"`).
DATA_WAIT_KEY = "sweeplab_data_wait_fraction"
# Where the report's checkpoint was persisted.
CHECKPOINT_PATH_KEY = "checkpoint_path"
# Tune's count of a trial's reports: the step of each metric point.
ITERATION_KEY = "training_iteration"
# The key Tune adds to the result it repeats when a function trainable returns
# (`ray.tune.result.RESULT_DUPLICATE`, spelled out here so that reading it needs no Ray;
# `tests/raycompat/test_raycompat.py` checks that it is still Tune's).
TUNE_DUPLICATE_RESULT_KEY = "__duplicate__"

# --- MLflow tags of a sweep's runs ---

# Every sweeplab tag starts with it; a best trial's params that a resumed sweep cannot
# overwrite, and the metric of a registered model version, are tagged ``<prefix><name>``.
TAG_PREFIX = "sweeplab."

# What a run records: the sweep (the parent run) or one trial (a child run).
ROLE_TAG = "sweeplab.role"
ROLE_SWEEP = "sweep"
ROLE_TRIAL = "trial"

# Parent run (and registered model version): the sweep's name.
SWEEP_TAG = "sweeplab.sweep"
# Parent run: ``best`` or ``last``, the reported value trials are ranked by.
RANK_BY_TAG = "sweeplab.rank_by"
# Parent run: how many trials were ranked.
TRIALS_TAG = "sweeplab.trials"
# Parent run: the best trial's ``best_config.json`` (when it fits in a tag).
BEST_TAG = "sweeplab.best"
BEST_METRIC_TAG = "sweeplab.best_metric"
BEST_TRIAL_ID_TAG = "sweeplab.best_trial_id"
# Parent run: the sweep whose trials warm-started this one.
WARM_START_TAG = "sweeplab.warm_start"
# Parent run of a multi-objective sweep: its objectives as JSON ``[[name, mode], ...]`` and its
# constraints as JSON ``["latency_ms <= 10", ...]``.
OBJECTIVES_TAG = "sweeplab.objectives"
CONSTRAINTS_TAG = "sweeplab.constraints"
# Parent run of a multi-objective sweep: the hypervolume of its front (a metric), and the front
# as a table artifact (one row per front-1 trial).
HYPERVOLUME_METRIC = "sweeplab.hypervolume"
FRONT_ARTIFACT = "pareto_front.json"
# Registered model version: the metric the sweep ranked by.
METRIC_TAG = "sweeplab.metric"

# Child run (and registered model version): Tune's trial id.
TRIAL_ID_TAG = "sweeplab.trial_id"
# Child run: one of the ``STATUS_*`` values below.
STATUS_TAG = "sweeplab.status"
STATUS_RUNNING = "running"
STATUS_FINISHED = "finished"
STATUS_STOPPED_EARLY = "stopped_early"
STATUS_DIVERGED = "diverged"
STATUS_ERRORED = "errored"
# Child run: Tune's restarts of the trial plus its trainer group's restarts.
RESTARTS_TAG = "sweeplab.restarts"
# Child run: 1 for the best trial, set when the sweep ends.
RANK_TAG = "sweeplab.rank"
# Child run of a multi-objective sweep: its Pareto front (1 = non-dominated) among the feasible
# trials, or ``FRONT_INFEASIBLE``; set when the sweep ends, like the rank.
FRONT_TAG = "sweeplab.front"
FRONT_INFEASIBLE = "infeasible"
# Child run: the config, as JSON, the trial was ranked with. A value that PBT changed to a
# non-number at iteration ``i`` is tagged ``sweeplab.config.<param>@<i>``.
CONFIG_TAG = "sweeplab.config"
# Child run of a stopped trial: ``divergence`` or the scheduler's name, and the iteration.
STOPPED_BY_TAG = "sweeplab.stopped_by"
STOPPED_AT_ITERATION_TAG = "sweeplab.stopped_at_iteration"
# Child run of an errored trial: the error's last line, then its text.
ERROR_TAG = "sweeplab.error"
# Child run of a PBT trial: the last donor, and every exploit as ``step <i>: from <donor>``.
PBT_DONOR_TAG = "sweeplab.pbt.donor"
PBT_LINEAGE_TAG = "sweeplab.pbt.lineage"
