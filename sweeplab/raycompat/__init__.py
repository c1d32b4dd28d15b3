"""The one package that touches Ray's private and internal APIs (and MLflow's, and libc's).

Everything sweeplab needs from Ray (and MLflow) beyond its public API goes through the small
functions here, and every private symbol they use is a row of :data:`PRIVATE_USES` saying what
it is for, why no public API serves, and whether a feature needs it (``"essential"``) or it only
makes sweeps faster or leaner (``"speed"``). Each private module holds one area's rows beside
its functions:

- ``_train``: the utilities behind a Train V2 worker's `ray.train.*`, wrapped for warm slots
  and routed in process for one-worker trials, and the lean trainer;
- ``_loader``: the data loaders `prepare_data_loader` returns, timed for the data-wait metric;
- ``_tune``: the median stopping rule's flag and Tune's duplicate-result key;
- ``_state``: placement groups with their creators, free resources per node, the head node;
- ``_searchers``: the Optuna study and HyperOpt trials behind Tune's searchers;
- ``_mlflow``: the tracking store behind an `MlflowClient`, MLflow's name rule, artifact URIs
  and REST requests, for bulk reads and writes, and the SQL sweeplab runs on MLflow's tables
  (:data:`MLFLOW_SCHEMA_USES`);
- ``_libc``: the C library's functions called through ``ctypes`` (:data:`LIBC_USES`), which no
  Python module wraps;
- ``_ledger``: the row classes.

``tests/raycompat/test_raycompat.py`` imports each row's symbol and checks the parameters
sweeplab passes, so a Ray upgrade that moves one fails that fast test, not a sweep.
``docs/upgrading-ray.md`` lists the rows for people.

This package imports nothing else of sweeplab, and Ray (with Optuna, HyperOpt and MLflow) only
inside its functions: ``sweeplab status`` and ``preview`` must start fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sweeplab.raycompat import (
    _loader,
    _mlflow,
    _searchers,
    _state,
    _train,
    _tune,
)
from sweeplab.raycompat._ledger import LibcUse, PrivateUse, SchemaUse
from sweeplab.raycompat._libc import LIBC_USES, libc_function
from sweeplab.raycompat._loader import (
    run_when_imported,
    time_prepared_loader_fetches,
)
from sweeplab.raycompat._mlflow import (
    MLFLOW_SCHEMA_REVISIONS,
    MLFLOW_SCHEMA_USES,
    MlflowSql,
    mlflow_accepts_name,
    mlflow_schema_mismatch,
    rest_get,
    run_artifact_uri,
    tracking_store,
)
from sweeplab.raycompat._searchers import hyperopt_trials, optuna_study
from sweeplab.raycompat._state import (
    PlacementGroupRecord,
    free_resources_per_node,
    head_node_id,
    placement_groups_with_creators,
)
from sweeplab.raycompat._train import (
    current_train_fn_utils,
    install_train_fn_utils,
    lean_torch_trainer,
    route_train_calls_in_process,
    transform_reported_metrics,
)
from sweeplab.raycompat._tune import (
    NewTrials,
    median_rule_stops_hard,
    trial_error_text,
)

if TYPE_CHECKING:
    from ray.train.v2._internal.execution.train_fn_utils import (
        DistributedTrainFnUtils as DistributedTrainFnUtils,
    )

__all__ = [
    "LIBC_USES",
    "MLFLOW_SCHEMA_REVISIONS",
    "MLFLOW_SCHEMA_USES",
    "PRIVATE_USES",
    "DistributedTrainFnUtils",
    "LibcUse",
    "MlflowSql",
    "NewTrials",
    "PlacementGroupRecord",
    "PrivateUse",
    "SchemaUse",
    "current_train_fn_utils",
    "free_resources_per_node",
    "head_node_id",
    "hyperopt_trials",
    "install_train_fn_utils",
    "lean_torch_trainer",
    "libc_function",
    "median_rule_stops_hard",
    "mlflow_accepts_name",
    "mlflow_schema_mismatch",
    "optuna_study",
    "placement_groups_with_creators",
    "rest_get",
    "route_train_calls_in_process",
    "run_artifact_uri",
    "run_when_imported",
    "time_prepared_loader_fetches",
    "tracking_store",
    "transform_reported_metrics",
    "trial_error_text",
]

PRIVATE_USES: tuple[PrivateUse, ...] = (
    *_train.USES,
    *_loader.USES,
    *_tune.USES,
    *_state.USES,
    *_searchers.USES,
    *_mlflow.USES,
)


def __getattr__(name: str) -> Any:
    # `DistributedTrainFnUtils` imported from Ray on first use, so that importing this stays free.
    if name == "DistributedTrainFnUtils":
        from ray.train.v2._internal.execution.train_fn_utils import DistributedTrainFnUtils

        return DistributedTrainFnUtils
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
