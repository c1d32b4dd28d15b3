"""MLflow beyond its documented API: the store behind a client, name rules, REST requests.

MLflow documents `mlflow`, `mlflow.client`, `mlflow.entities` and the REST API. The tracking
writer and the bulk reads also need the store object behind a client, MLflow's own name
validation, its artifact URI joining and its authenticated REST requests, which live in
`mlflow.tracking` and `mlflow.utils`; each is a row here.
"""

from __future__ import annotations

from typing import Any

from sweeplab.raycompat._uses import PrivateUse

PRIVATE_USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        "mlflow.tracking",
        "_get_store",
        ("store_uri",),
        "the store object behind `MlflowClient(uri)` (the same cached instance), for "
        "`SqlAlchemyStore.get_metric_history_bulk`; the client reads one run's history per call "
        "and has no public accessor for its store (the name is in `mlflow.tracking.__all__`)",
    ),
    PrivateUse(
        "mlflow.utils.validation",
        "validate_param_and_metric_name",
        ("name",),
        "the bulk writer sends a name through MLflow's client when MLflow's validation would "
        "reject it (so that MLflow reports it); the rule has no public function",
    ),
    PrivateUse(
        "mlflow.utils.validation",
        "path_not_unique",
        ("name",),
        "the other half of MLflow's name rule (no '..' or absolute paths)",
    ),
    PrivateUse(
        "mlflow.utils.uri",
        "append_to_uri_path",
        ("uri",),
        "a bulk-written run's artifact URI, joined as `SqlAlchemyStore.create_run` joins it",
    ),
    PrivateUse(
        "mlflow.utils.credentials",
        "get_default_host_creds",
        ("store_uri",),
        "the token, user and password MLflow's REST store sends, for the bulk history endpoint "
        "that `MlflowClient` does not call",
    ),
    PrivateUse(
        "mlflow.utils.rest_utils",
        "http_request",
        ("host_creds", "endpoint", "method"),
        "a GET of `/ajax-api/2.0/mlflow/metrics/get-history-bulk` with MLflow's retries and "
        "headers; no client method reads many runs' histories at once",
    ),
    PrivateUse(
        "mlflow.utils.rest_utils",
        "verify_rest_response",
        ("response", "endpoint"),
        "turns that request's error answer into MLflow's exception, as the REST store does",
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
