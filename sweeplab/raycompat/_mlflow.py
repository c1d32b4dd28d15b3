"""MLflow beyond its documented API: the store behind a client, name rules, REST requests.

MLflow documents `mlflow`, `mlflow.client`, `mlflow.entities` and the REST API. The tracking
writer and the bulk reads also need the store object behind a client, MLflow's own name
validation, its artifact URI joining and its authenticated REST requests, which live in
`mlflow.tracking` and `mlflow.utils`; each is a row here. Then MLflow's SQL schema: the
statements sweeplab runs on a SQL store's tables, and the tables and columns they name.
"""

from __future__ import annotations

from typing import Any

from sweeplab.raycompat._ledger import PrivateUse, SchemaUse

__all__ = [
    "MLFLOW_SCHEMA_REVISIONS",
    "MLFLOW_SCHEMA_USES",
    "USES",
    "MlflowSql",
    "mlflow_accepts_name",
    "mlflow_schema_mismatch",
    "rest_get",
    "run_artifact_uri",
    "tracking_store",
]

USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        "mlflow.tracking",
        "_get_store",
        ("store_uri",),
        "the store object behind `MlflowClient(uri)` (the same cached instance), for "
        "`SqlAlchemyStore.get_metric_history_bulk`; the client reads one run's history per call "
        "and has no public accessor for its store (the name is in `mlflow.tracking.__all__`)",
        purpose="speed",
        feature="bulk MLflow reads and writes",
    ),
    PrivateUse(
        "mlflow.utils.validation",
        "validate_param_and_metric_name",
        ("name",),
        "the bulk writer sends a name through MLflow's client when MLflow's validation would "
        "reject it (so that MLflow reports it); the rule has no public function",
        purpose="speed",
        feature="bulk MLflow writes",
    ),
    PrivateUse(
        "mlflow.utils.validation",
        "path_not_unique",
        ("name",),
        "the other half of MLflow's name rule (no '..' or absolute paths)",
        purpose="speed",
        feature="bulk MLflow writes",
    ),
    PrivateUse(
        "mlflow.utils.uri",
        "append_to_uri_path",
        ("uri",),
        "a bulk-written run's artifact URI, joined as `SqlAlchemyStore.create_run` joins it",
        purpose="speed",
        feature="bulk MLflow writes",
    ),
    PrivateUse(
        "mlflow.utils.credentials",
        "get_default_host_creds",
        ("store_uri",),
        "the token, user and password MLflow's REST store sends, for the bulk history endpoint "
        "that `MlflowClient` does not call",
        purpose="speed",
        feature="bulk metric-history reads from a tracking server",
    ),
    PrivateUse(
        "mlflow.utils.rest_utils",
        "http_request",
        ("host_creds", "endpoint", "method"),
        "a GET of `/ajax-api/2.0/mlflow/metrics/get-history-bulk` with MLflow's retries and "
        "headers; no client method reads many runs' histories at once",
        purpose="speed",
        feature="bulk metric-history reads from a tracking server",
    ),
    PrivateUse(
        "mlflow.utils.rest_utils",
        "verify_rest_response",
        ("response", "endpoint"),
        "turns that request's error answer into MLflow's exception, as the REST store does",
        purpose="speed",
        feature="bulk metric-history reads from a tracking server",
    ),
)


def tracking_store(uri: str) -> Any:
    """The store object behind ``MlflowClient(uri)`` (MLflow's cached instance, no new engine)."""
    from mlflow.tracking import _get_store

    return _get_store(store_uri=uri)


def mlflow_accepts_name(name: str) -> bool:
    """Whether MLflow's validation accepts `name` as a metric, param or tag key (length aside)."""
    from mlflow.utils.validation import path_not_unique, validate_param_and_metric_name

    return bool(validate_param_and_metric_name(name)) and not path_not_unique(name)


def run_artifact_uri(artifact_location: str, run_id: str) -> str:
    """The artifact URI MLflow's SQL store gives a new run of an experiment at that location."""
    from mlflow.utils.uri import append_to_uri_path

    return str(append_to_uri_path(artifact_location, run_id, "artifacts"))


def rest_get(uri: str, endpoint: str, params: dict[str, Any]) -> Any:
    """The JSON answer of a GET of `endpoint` on the tracking server `uri`, as MLflow sends it.

    Raises:
        mlflow.exceptions.MlflowException: The server answered with an error.
    """
    from mlflow.utils.credentials import get_default_host_creds
    from mlflow.utils.rest_utils import http_request, verify_rest_response

    # The credentials and headers MLflow's own REST store sends (token, user and password).
    response = http_request(get_default_host_creds(uri), endpoint, "GET", params=params)
    return verify_rest_response(response, endpoint).json()


# MLflow's SQL schema. MLflow documents its REST API and its client, not the tables behind a SQL
# store, which sweeplab writes in bulk (`tracking/_bulk.py`) and trims in a new store's template
# (`tracking/_new_store.py`). Every statement on them is here; each table and column it names
# is a row of `MLFLOW_SCHEMA_USES`, which a test checks against a store MLflow has just created.

MLFLOW_SCHEMA_USES: tuple[SchemaUse, ...] = (
    SchemaUse(
        "runs",
        (
            "run_uuid",
            "name",
            "source_type",
            "source_name",
            "entry_point_name",
            "user_id",
            "status",
            "start_time",
            "end_time",
            "deleted_time",
            "source_version",
            "lifecycle_stage",
            "artifact_uri",
            "experiment_id",
        ),
        "a trial's child run, created, renamed and ended many at a time (MLflow's client "
        "creates one run per call), and a sweep's child runs read in one query each",
    ),
    SchemaUse("tags", ("key", "value", "run_uuid"), "child runs' tags, set many runs at once"),
    SchemaUse("params", ("key", "value", "run_uuid"), "child runs' parameters, in bulk"),
    SchemaUse(
        "metrics",
        ("key", "value", "timestamp", "step", "is_nan", "run_uuid"),
        "child runs' metric history, in bulk",
    ),
    SchemaUse(
        "latest_metrics",
        ("key", "value", "timestamp", "step", "is_nan", "run_uuid"),
        "each metric's latest point, which MLflow keeps beside the history",
    ),
    SchemaUse(
        "experiments",
        ("experiment_id", "name"),
        "the `Default` experiment, dropped from a new store's template (MLflow adds it back "
        "with the copy's own artifact location), and an experiment found by name",
    ),
    SchemaUse("experiment_tags", ("experiment_id",), "the `Default` experiment's tags, dropped"),
)


# The Alembic revisions of MLflow's schema (``alembic_version.version_num``) on which every row
# of MLFLOW_SCHEMA_USES was checked by tests/raycompat/test_mlflow_schema.py: MLflow 3.17's head.
# A store at another revision is checked column by column before sweeplab writes to it.
MLFLOW_SCHEMA_REVISIONS: frozenset[str] = frozenset({"dc11669786a5"})


def mlflow_schema_mismatch(connection: Any) -> str | None:
    """Why sweeplab's statements (`MlflowSql`) do not fit the schema of the store that a
    SQLAlchemy `connection` reads, in a few words; None where they do.

    A revision of `MLFLOW_SCHEMA_REVISIONS` fits. Another fits where every table and column of
    `MLFLOW_SCHEMA_USES` is there (the columns sweeplab writes have been in MLflow's schema
    since 2.x; a newer MLflow that renames one is refused, never written to).
    """
    from sqlalchemy import inspect, text

    try:
        revision = connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except Exception as error:
        return f"it has no MLflow schema revision ({type(error).__name__})"
    if revision in MLFLOW_SCHEMA_REVISIONS:
        return None
    inspector = inspect(connection)
    missing = []
    for use in MLFLOW_SCHEMA_USES:
        try:
            present = {column["name"] for column in inspector.get_columns(use.table)}
        except Exception:
            present = set()
        missing += [f"{use.table}.{name}" for name in use.columns if name not in present]
    if missing:
        return f"its MLflow schema (revision {revision}) lacks {', '.join(missing[:5])}"
    return None


# The sweep's child runs: active runs of the parent's experiment tagged with the parent's id.
_SWEEP_CHILDREN = (
    "SELECT r.run_uuid FROM runs AS r JOIN tags AS p ON p.run_uuid = r.run_uuid"
    " WHERE r.experiment_id = :experiment AND r.lifecycle_stage = 'active'"
    " AND p.key = :parent_key AND p.value = :parent"
)


class MlflowSql:
    """The statements sweeplab runs on MLflow's tables, with SQLAlchemy's ``:name`` parameters."""

    # A run's row as MLflow's create_run writes it (source type UNKNOWN, empty source fields).
    INSERT_RUN = (
        "INSERT INTO runs (run_uuid, name, source_type, source_name, entry_point_name,"
        " user_id, status, start_time, end_time, deleted_time, source_version, lifecycle_stage,"
        " artifact_uri, experiment_id) VALUES (:run_uuid, :name, 'UNKNOWN', '', '', :user_id,"
        " :status, :start_time, :end_time, NULL, '', 'active', :artifact_uri, :experiment_id)"
    )
    INSERT_TAG = "INSERT INTO tags (key, value, run_uuid) VALUES (:key, :value, :run_uuid)"
    DELETE_TAG = "DELETE FROM tags WHERE run_uuid = :run_uuid AND key = :key"
    INSERT_PARAM = "INSERT INTO params (key, value, run_uuid) VALUES (:key, :value, :run_uuid)"
    INSERT_METRIC = (
        "INSERT INTO metrics (key, value, timestamp, step, is_nan, run_uuid)"
        " VALUES (:key, :value, :timestamp, :step, :is_nan, :run_uuid)"
    )
    INSERT_LATEST = (
        "INSERT INTO latest_metrics (key, value, timestamp, step, is_nan, run_uuid)"
        " VALUES (:key, :value, :timestamp, :step, :is_nan, :run_uuid)"
    )
    DELETE_LATEST = "DELETE FROM latest_metrics WHERE run_uuid = :run_uuid AND key = :key"
    SET_NAME = "UPDATE runs SET name = :name WHERE run_uuid = :run_uuid"
    SET_STATUS = "UPDATE runs SET status = :status, end_time = :end_time WHERE run_uuid = :run_uuid"
    RUN_EXPERIMENT = "SELECT experiment_id FROM runs WHERE run_uuid = :run_id"
    # Completed by an expanding ``:values`` parameter.
    LATEST_IN = "SELECT run_uuid, key, step, timestamp, value FROM latest_metrics WHERE run_uuid IN"
    RUNS_IN = "SELECT run_uuid FROM runs WHERE run_uuid IN"
    ACTIVE_RUNS_IN = "SELECT run_uuid FROM runs WHERE lifecycle_stage = 'active' AND run_uuid IN"
    # A sweep's child runs and their tags, parameters and latest metrics (``:experiment``,
    # ``:parent_key``, ``:parent``), the runs newest first as ``search_runs`` returns them.
    CHILD_RUNS = (
        "SELECT run_uuid, name, experiment_id, user_id, status, start_time, end_time,"
        f" lifecycle_stage, artifact_uri FROM runs WHERE run_uuid IN ({_SWEEP_CHILDREN})"
        " ORDER BY start_time DESC, run_uuid"
    )
    CHILD_TAGS = f"SELECT run_uuid, key, value FROM tags WHERE run_uuid IN ({_SWEEP_CHILDREN})"
    CHILD_PARAMS = f"SELECT run_uuid, key, value FROM params WHERE run_uuid IN ({_SWEEP_CHILDREN})"
    CHILD_METRICS = (
        "SELECT run_uuid, key, value, timestamp, step, is_nan FROM latest_metrics"
        f" WHERE run_uuid IN ({_SWEEP_CHILDREN})"
    )
    # For sqlite3: the latest sweep of an experiment, its best-trial tag (role key, role value,
    # best key, experiment name).
    LATEST_SWEEP_BEST = """
SELECT best.value
FROM runs AS r
JOIN experiments AS e ON e.experiment_id = r.experiment_id
JOIN tags AS role ON role.run_uuid = r.run_uuid AND role.key = ? AND role.value = ?
LEFT JOIN tags AS best ON best.run_uuid = r.run_uuid AND best.key = ?
WHERE e.name = ? AND r.lifecycle_stage = 'active'
ORDER BY r.start_time DESC, r.run_uuid
LIMIT 1
"""
    # For sqlite3, no parameters: a new store's template without MLflow's `Default` experiment.
    DROP_DEFAULT_EXPERIMENT = (
        "DELETE FROM experiment_tags WHERE experiment_id = 0",
        "DELETE FROM experiments WHERE experiment_id = 0",
    )
