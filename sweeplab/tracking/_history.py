"""The metric histories of many runs, read in a few round trips instead of one per run and key.

MLflow's client reads one run's history of one metric per call: at 10,000 trials of two metrics
that is 20,000 queries (or HTTP requests). A SQL store answers one query for many runs
(``SqlAlchemyStore.get_metric_history_bulk``) and a tracking server one request for up to 100
runs (``GET /ajax-api/2.0/mlflow/metrics/get-history-bulk``). Any other store, and any failure
of these, is read run by run as before. Every path gives each run's points in the order MLflow's
own ``get_metric_history`` gives them: by timestamp, step and value.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from typing import Any
from urllib.parse import urlparse

from sweeplab.raycompat import rest_get, tracking_store

__all__ = ["metric_histories"]

logger = logging.getLogger(__name__)

SQL_SCHEMES = frozenset({"sqlite", "postgresql", "mysql", "mssql"})
HTTP_SCHEMES = frozenset({"http", "https"})
SQL_RUNS_PER_QUERY = 500  # well under SQLite's oldest limit of 999 bound parameters
BULK_ENDPOINT = "/ajax-api/2.0/mlflow/metrics/get-history-bulk"
HTTP_RUNS_PER_REQUEST = 100  # the server refuses more
HTTP_POINTS_PER_RESPONSE = 25_000  # the server cuts its answer here

# The runs to read of each metric key, and what was read: a run's points of a key.
Wanted = dict[str, list[str]]
Read = dict[tuple[str, str], list[Any]]


def metric_histories(
    client: Any, uri: str, runs: Sequence[Any], keys: Collection[str] | None = None
) -> dict[str, dict[str, list[Any]]]:
    """The metric histories of many runs, read in as few round trips as the store allows.

    Args:
        client: An ``MlflowClient`` of the store (for the run-by-run path).
        uri: The store's resolved tracking URI; its scheme picks the path.
        runs: MLflow runs (from ``search_runs``); each is read for the metrics it has.
        keys: Only these metric keys (of those each run has); ``None`` for all.

    Returns:
        ``{run_id: {key: [Metric, ...]}}``, every run and each of its wanted keys (in
        ``run.data.metrics`` order), the points as ``client.get_metric_history`` returns them.
    """
    wanted_keys = {
        run.info.run_id: [k for k in run.data.metrics if keys is None or k in keys] for run in runs
    }
    wanted: Wanted = defaultdict(list)
    for run_id, run_keys in wanted_keys.items():
        for key in run_keys:
            wanted[key].append(run_id)
    read: Read | None = None
    if wanted:
        try:
            read = _read_bulk(client, uri, wanted)
        except Exception:
            logger.debug(
                "bulk metric history read of %s failed; reading run by run", uri, exc_info=True
            )
    if read is None:
        read = _read_per_run(client, wanted)
    return {
        run_id: {key: read.get((run_id, key), []) for key in run_keys}
        for run_id, run_keys in wanted_keys.items()
    }


def store_scheme(uri: str) -> str:
    """The kind of store a tracking URI names: ``postgresql+psycopg://...`` is ``postgresql``."""
    return urlparse(uri).scheme.split("+", 1)[0].lower()


def _read_bulk(client: Any, uri: str, wanted: Wanted) -> Read | None:
    """The histories from the store's bulk read; ``None`` where the store has none."""
    scheme = store_scheme(uri)
    if scheme in HTTP_SCHEMES:
        return _read_http(client, uri, wanted)
    if scheme in SQL_SCHEMES:
        store = tracking_store(uri)
        if callable(getattr(store, "get_metric_history_bulk", None)):
            return _read_sql(store, wanted)
    return None


def _chunks(items: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    return (items[i : i + size] for i in range(0, len(items), size))


def _read_sql(store: Any, wanted: Wanted) -> Read:
    from mlflow.entities import Metric

    read: Read = defaultdict(list)
    for key, run_ids in wanted.items():
        for chunk in _chunks(run_ids, SQL_RUNS_PER_QUERY):
            # By run, then timestamp, step and value: each run's points in the per-run order.
            for point in store.get_metric_history_bulk(
                run_ids=list(chunk), metric_key=key, max_results=None
            ):
                read[(point.run_id, key)].append(
                    Metric(key=key, value=point.value, timestamp=point.timestamp, step=point.step)
                )
    return read


def _read_http(client: Any, uri: str, wanted: Wanted) -> Read:
    from mlflow.entities import Metric

    read: Read = defaultdict(list)
    for key, run_ids in wanted.items():
        for chunk in _chunks(run_ids, HTTP_RUNS_PER_REQUEST):
            params = {
                "run_id": list(chunk),
                "metric_key": key,
                "max_results": HTTP_POINTS_PER_RESPONSE,
            }
            points = rest_get(uri, BULK_ENDPOINT, params).get("metrics", [])
            if len(points) >= HTTP_POINTS_PER_RESPONSE:  # cut short: read these runs one by one
                read.update(_read_per_run(client, {key: list(chunk)}))
                continue
            for point in points:
                read[(point["run_id"], key)].append(
                    Metric(
                        key=key,
                        value=float(point["value"]),
                        timestamp=int(point["timestamp"]),
                        step=int(point["step"]),
                    )
                )
    return read


def _read_per_run(client: Any, wanted: Wanted) -> Read:
    return {
        (run_id, key): list(client.get_metric_history(run_id, key))
        for key, run_ids in wanted.items()
        for run_id in run_ids
    }
