"""The MLflow tracking store behind a client, for reads no `MlflowClient` method does in bulk."""

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
)


def tracking_store(uri: str) -> Any:
    """The store object behind ``MlflowClient(uri)`` (MLflow's cached instance, no new engine)."""
    from mlflow.tracking import _get_store

    return _get_store(store_uri=uri)
