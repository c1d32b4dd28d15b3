"""The one package that touches Ray's private and internal APIs (and MLflow's one).

Everything sweeplab needs from Ray (and MLflow) beyond its public API goes through the small
functions here, and every private symbol they use is a row of :data:`PRIVATE_USES` saying what
it is for and why no public API serves. Each part keeps its rows beside its functions:

- ``_train``: Ray Train V2 workers and controllers, and `ray.train.*` routed in process;
- ``_loader``: the data loaders `prepare_data_loader` returns, timed for the data-wait metric;
- ``_tune``: Tune's trainable and its registry, scheduler state (median rule, PBT), actor
  cache, trial checkpoints, an ended trial's statistics and the duplicate-result key;
- ``_cluster``: placement groups with their creators, free resources per node, the head node;
- ``_searchers``: the Optuna study and HyperOpt trials behind Tune's searchers;
- ``_mlflow``: the tracking store behind an `MlflowClient`, MLflow's name rule, artifact URIs
  and REST requests, for bulk reads and writes.

``tests/raycompat/test_raycompat.py`` imports each row's symbol and checks the parameters
sweeplab passes, so a Ray upgrade that moves one fails that fast test, not a sweep.
``docs/upgrading-ray.md`` lists the rows for people.

This package imports nothing else of sweeplab, and Ray (with Optuna and HyperOpt) only inside
its functions: ``sweeplab status`` and ``preview`` must start fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sweeplab.raycompat import _cluster, _loader, _mlflow, _searchers, _train, _tune
from sweeplab.raycompat._cluster import (
    PlacementGroupRecord,
    free_resources_per_node,
    head_node_id,
    placement_groups_with_creators,
)
from sweeplab.raycompat._loader import prepared_data_loader, time_prepared_loader_fetches
from sweeplab.raycompat._mlflow import (
    mlflow_accepts_name,
    rest_get,
    run_artifact_uri,
    tracking_store,
)
from sweeplab.raycompat._searchers import hyperopt_trials, optuna_study
from sweeplab.raycompat._train import (
    abort_train_controller,
    current_train_context,
    current_train_fn_utils,
    disable_tune_session_guard,
    install_train_fn_utils,
    lean_torch_trainer,
    route_train_calls_in_process,
    start_worker_from_checkpoint,
    transform_reported_metrics,
)
from sweeplab.raycompat._tune import (
    forget_trial_statistics,
    function_trainable_class,
    keep_idle_trial_actors,
    median_rule_stops_hard,
    pbt_exploit_iteration,
    pbt_next_round,
    pbt_with_exploit_hook,
    replace_trial_restore_checkpoint,
    rewire_restored_tuner,
    trainable_registry_cached,
    trial_dataframes_not_read,
    trial_error_text,
    trial_restore_checkpoint,
    tune_flattener,
    tune_merge,
)
from sweeplab.raycompat._uses import PrivateUse

if TYPE_CHECKING:
    from sweeplab.raycompat._train import DistributedTrainFnUtils

__all__ = [
    "PRIVATE_USES",
    "DistributedTrainFnUtils",
    "PlacementGroupRecord",
    "PrivateUse",
    "abort_train_controller",
    "current_train_context",
    "current_train_fn_utils",
    "disable_tune_session_guard",
    "forget_trial_statistics",
    "free_resources_per_node",
    "function_trainable_class",
    "head_node_id",
    "hyperopt_trials",
    "install_train_fn_utils",
    "keep_idle_trial_actors",
    "lean_torch_trainer",
    "median_rule_stops_hard",
    "mlflow_accepts_name",
    "optuna_study",
    "pbt_exploit_iteration",
    "pbt_next_round",
    "pbt_with_exploit_hook",
    "placement_groups_with_creators",
    "prepared_data_loader",
    "replace_trial_restore_checkpoint",
    "rest_get",
    "rewire_restored_tuner",
    "route_train_calls_in_process",
    "run_artifact_uri",
    "start_worker_from_checkpoint",
    "time_prepared_loader_fetches",
    "tracking_store",
    "trainable_registry_cached",
    "transform_reported_metrics",
    "trial_dataframes_not_read",
    "trial_error_text",
    "trial_restore_checkpoint",
    "tune_flattener",
    "tune_merge",
]

PRIVATE_USES: tuple[PrivateUse, ...] = (
    *_train.PRIVATE_USES,
    *_loader.PRIVATE_USES,
    *_tune.PRIVATE_USES,
    *_cluster.PRIVATE_USES,
    *_searchers.PRIVATE_USES,
    *_mlflow.PRIVATE_USES,
)


def __getattr__(name: str) -> Any:
    # `DistributedTrainFnUtils` imported from Ray on first use, so that importing this stays free.
    if name == "DistributedTrainFnUtils":
        return _train.DistributedTrainFnUtils
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
