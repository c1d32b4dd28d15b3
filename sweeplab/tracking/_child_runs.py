"""The child runs of a sweep, read from a SQL store's tables in four queries.

``MlflowClient.search_runs`` builds an ORM object for each run and each of its tags, params and
metrics: at 10,000 trials that was about a third of `sweeplab report`'s time. A SQL store
(SQLite, PostgreSQL, MySQL) is read here with four plain queries on MLflow's tables ``runs``,
``tags``, ``params`` and ``latest_metrics``, and each row becomes the same ``mlflow.entities``
object that ``search_runs`` returns: a run's info, its tags, its params and its latest metrics
(NaN where MLflow stored one). Like ``search_runs`` it reads active runs only.

Any other store, and any failure here, answers None: the caller searches through MLflow as
before. The tests compare both reads on real stores, so a change of MLflow's schema shows there.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from sweeplab.raycompat import MlflowSql, tracking_store
from sweeplab.tracking._flusher import PARENT_TAG
from sweeplab.tracking._history import SQL_SCHEMES, store_scheme

__all__ = ["child_runs_from_tables"]

logger = logging.getLogger(__name__)


def child_runs_from_tables(uri: str, parent: Any) -> list[Any] | None:
    """The active child runs of the sweep run `parent`, as ``search_runs`` gives them (newest
    first), read from the tables of the SQL store at `uri`; None where that store is no SQL
    store or the read fails."""
    if store_scheme(uri) not in SQL_SCHEMES:
        return None
    try:
        engine = tracking_store(uri).engine
        return _read(engine, parent)
    except Exception:
        logger.debug("reading the child runs of %s from its tables failed", uri, exc_info=True)
        return None


def _read(engine: Any, parent: Any) -> list[Any]:
    from mlflow.entities import Metric, Param, Run, RunData, RunInfo, RunTag
    from sqlalchemy import text

    bound = {
        "experiment": int(parent.info.experiment_id),
        "parent_key": PARENT_TAG,
        "parent": parent.info.run_id,
    }
    tags: dict[str, list[Any]] = defaultdict(list)
    params: dict[str, list[Any]] = defaultdict(list)
    metrics: dict[str, list[Any]] = defaultdict(list)
    with engine.connect() as connection:
        runs = connection.execute(text(MlflowSql.CHILD_RUNS), bound).all()
        for run_id, key, value in connection.execute(text(MlflowSql.CHILD_TAGS), bound):
            tags[run_id].append(RunTag(key, value))
        for run_id, key, value in connection.execute(text(MlflowSql.CHILD_PARAMS), bound):
            params[run_id].append(Param(key, value))
        for run_id, key, value, timestamp, step, is_nan in connection.execute(
            text(MlflowSql.CHILD_METRICS), bound
        ):
            value = float("nan") if is_nan else value
            metrics[run_id].append(Metric(key, value, timestamp, step))
    children = []
    for run_id, name, experiment_id, user_id, status, start, end, stage, artifacts in runs:
        info = RunInfo(
            run_id=run_id,
            run_name=name,
            experiment_id=str(experiment_id),
            user_id=user_id,
            status=status,
            start_time=start,
            end_time=end,
            lifecycle_stage=stage,
            artifact_uri=artifacts,
        )
        data = RunData(metrics=metrics[run_id], params=params[run_id], tags=tags[run_id])
        children.append(Run(run_info=info, run_data=data))
    return children
