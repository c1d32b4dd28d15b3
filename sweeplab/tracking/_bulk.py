"""Many trials' child runs written to a SQL store in one transaction.

MLflow's client has no call that creates runs or sets tags on many runs at once. Through its
ORM a trial costs three calls (``create_run``, ``log_batch``, ``set_terminated``) and its rank
tags a fourth, each a session with several queries: about 20 ms of the writer's CPU per trial,
which on 2 cores competes with the trials themselves. For a SQL store (SQLite, PostgreSQL,
MySQL) :class:`SqlBulk` writes the same rows with plain statements on MLflow's tables
``runs``, ``tags``, ``params``, ``metrics`` and ``latest_metrics``, many runs per transaction,
as MLflow's ``SqlAlchemyStore`` would write them: a run's artifact URI under its experiment's
artifact location, its name also in the tag ``mlflow.runName``, NaN stored as 0 with
``is_nan``, infinities as the largest float, and each metric's latest point by
(step, timestamp, value).

It takes only what it can write as MLflow would: names that MLflow's validation accepts, and
runs it created or active runs. Everything else, and any batch that fails, goes through
MLflow's client as before (the tests compare both on real stores, so a change of MLflow's
schema shows there). ``SWEEPLAB_TRACKING_BULK=0`` turns it off. A sweep that logs through a
tracking server writes its child runs this way into the server's database where
``SWEEPLAB_TRACKING_DATABASE`` names it (:func:`sql_bulk`).
"""

from __future__ import annotations

import logging
import math
import os
import sys
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from sweeplab.raycompat import (
    MlflowSql,
    mlflow_accepts_name,
    mlflow_schema_mismatch,
    run_artifact_uri,
    tracking_store,
)
from sweeplab.tracking._history import HTTP_SCHEMES, SQL_SCHEMES, store_scheme

__all__ = ["DATABASE_ENV", "BulkRun", "SqlBulk", "redacted", "sql_bulk"]

logger = logging.getLogger(__name__)

RUN_NAME_TAG = "mlflow.runName"
USER_TAG = "mlflow.user"
MAX_KEY_LENGTH = 250  # mlflow.utils.validation.MAX_ENTITY_KEY_LENGTH
# The backend store of a tracking server, for a sweep that logs through the server.
DATABASE_ENV = "SWEEPLAB_TRACKING_DATABASE"


@dataclass
class BulkRun:
    """What one trial's child run gets in a bulk write.

    ``create`` is set for a run this write creates (``run_id`` is then new); otherwise the run
    exists and gets the tags, metrics and status.
    """

    run_id: str
    tags: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    # (key, value, timestamp in ms, step), no two alike
    metrics: list[tuple[str, float, int, int]] = field(default_factory=list)
    terminal: str | None = None
    end_time: int | None = None
    create: bool = False
    run_name: str | None = None
    start_time: int | None = None


def sql_bulk(
    tracking_uri: str, experiment_id: str, parent_run_id: str | None = None
) -> SqlBulk | None:
    """A :class:`SqlBulk` for the store at `tracking_uri`; None where it is no SQL store, the
    bulk writes are turned off, or the store cannot be read now.

    For a tracking server (``http://...``) it writes into the server's backend store where
    ``SWEEPLAB_TRACKING_DATABASE`` names it, and only if that database holds the sweep's
    parent run `parent_run_id`: a database that is not the server's is never written.
    """
    if os.environ.get("SWEEPLAB_TRACKING_BULK", "1") == "0":
        return None
    scheme = store_scheme(tracking_uri)
    if scheme in HTTP_SCHEMES and os.environ.get(DATABASE_ENV):
        return _server_database_bulk(tracking_uri, experiment_id, parent_run_id)
    if scheme not in SQL_SCHEMES:
        return None
    try:
        store = tracking_store(tracking_uri)
        experiment = store.get_experiment(experiment_id)
    except Exception:
        logger.debug("no bulk writes to %s", tracking_uri, exc_info=True)
        return None
    return _checked(store.engine, experiment_id, experiment.artifact_location, tracking_uri)


def _checked(engine: Any, experiment_id: str, location: str, shown: str) -> SqlBulk | None:
    """A :class:`SqlBulk` on `engine` where sweeplab's statements fit its schema; None, said in
    one warning, where they do not (the runs then go through MLflow's client: nothing is lost,
    and nothing is written that MLflow would not read)."""
    try:
        with engine.connect() as connection:
            mismatch = mlflow_schema_mismatch(connection)
    except Exception as error:
        mismatch = f"its schema cannot be read ({type(error).__name__})"
    if mismatch is not None:
        logger.warning(
            "The tracking store %s is written through MLflow's client, not in bulk: %s.",
            redacted(shown), mismatch,
        )  # fmt: skip
        return None
    return SqlBulk(engine, experiment_id, location)


def _server_database_bulk(
    server_uri: str, experiment_id: str, parent_run_id: str | None
) -> SqlBulk | None:
    """A :class:`SqlBulk` on the database ``SWEEPLAB_TRACKING_DATABASE`` names, checked to be
    the backend store of the tracking server at `server_uri`; None, said in one warning, where
    it is not."""
    database = os.environ[DATABASE_ENV]
    shown = redacted(database)
    if store_scheme(database) not in SQL_SCHEMES:
        logger.warning(
            "%s=%s is not a database URI (%s): child runs go through %s.",
            DATABASE_ENV, shown, ", ".join(sorted(f"{s}://" for s in SQL_SCHEMES)), server_uri,
        )  # fmt: skip
        return None
    try:
        # Read without MLflow first: its store would create its tables in an empty database.
        parent_experiment = _run_experiment(database, parent_run_id)
        if parent_experiment == experiment_id:
            store = tracking_store(database)
            experiment = store.get_experiment(experiment_id)
    except Exception as error:
        logger.warning(
            "%s=%s cannot be read (%s): child runs go through %s.",
            DATABASE_ENV, shown, str(error).splitlines()[0] if str(error) else error, server_uri,
        )  # fmt: skip
        return None
    if parent_experiment != experiment_id:
        logger.warning(
            "%s=%s does not hold this sweep's parent run, so it is not the backend store of %s:"
            " child runs go through the server.",
            DATABASE_ENV, shown, server_uri,
        )  # fmt: skip
        return None
    return _checked(store.engine, experiment_id, experiment.artifact_location, database)


def _run_experiment(database: str, run_id: str | None) -> str | None:
    """The experiment id of run `run_id` in the MLflow database `database`, None if absent."""
    from sqlalchemy import create_engine, text

    if run_id is None:
        return None
    engine = create_engine(database)
    try:
        with engine.connect() as connection:
            row = connection.execute(text(MlflowSql.RUN_EXPERIMENT), {"run_id": run_id}).first()
    finally:
        engine.dispose()
    return None if row is None else str(row[0])


def redacted(uri: str) -> str:
    """`uri` without the password in its user part."""
    password = urlparse(uri).password
    if password is None:
        return uri
    return uri.replace(f":{password}@", ":***@", 1)  # the first "@" ends the user part


def new_run_id() -> str:
    """A run id as MLflow makes one."""
    return uuid.uuid4().hex


def valid_name(name: str) -> bool:
    """Whether MLflow's validation accepts `name` as a metric, param or tag key."""
    return bool(name) and len(name) <= MAX_KEY_LENGTH and mlflow_accepts_name(name)


def _stored(value: float) -> tuple[float, bool]:
    """(value, is_nan) as MLflow's SQL store keeps a metric value."""
    if math.isnan(value):
        return 0.0, True
    if math.isinf(value):
        return math.copysign(sys.float_info.max, value), False
    return value, False


class SqlBulk:
    """Writes child runs, their tags, params, metrics and status, many runs per transaction.

    Args:
        engine: The SQLAlchemy engine of MLflow's store.
        experiment_id: Experiment of the runs.
        artifact_location: The experiment's artifact location.
    """

    def __init__(self, engine: Any, experiment_id: str, artifact_location: str) -> None:
        self._engine = engine
        self._experiment_id = int(experiment_id)
        self._artifact_location = artifact_location

    def accepts(self, run: BulkRun) -> bool:
        """Whether every name in `run` is one MLflow's validation accepts."""
        return all(
            valid_name(key)
            for key in (*run.tags, *run.params, *(point[0] for point in run.metrics))
        )

    def write(self, runs: Sequence[BulkRun]) -> None:
        """Writes `runs` in one transaction: all of them or, on an error, none."""
        from sqlalchemy import text

        created = [run for run in runs if run.create]
        existing = [run for run in runs if not run.create]
        run_rows, tag_rows, param_rows, metric_rows = [], [], [], []
        for run in created:
            name = run.run_name or run.tags.get(RUN_NAME_TAG) or run.run_id
            run_rows.append(
                {
                    "run_uuid": run.run_id,
                    "name": name,
                    "user_id": run.tags.get(USER_TAG, "unknown"),
                    "status": run.terminal or "RUNNING",
                    "start_time": run.start_time,
                    "end_time": run.end_time if run.terminal else None,
                    "artifact_uri": run_artifact_uri(self._artifact_location, run.run_id),
                    "experiment_id": self._experiment_id,
                }
            )
            tag_rows += _rows(run.run_id, {**run.tags, RUN_NAME_TAG: name})
            param_rows += _rows(run.run_id, run.params)
        for run in runs:
            for key, value, timestamp, step in run.metrics:
                stored, is_nan = _stored(value)
                metric_rows.append(
                    {
                        "key": key,
                        "value": stored,
                        "timestamp": timestamp,
                        "step": step,
                        "is_nan": is_nan,
                        "run_uuid": run.run_id,
                    }
                )
        with self._engine.begin() as connection:
            if run_rows:
                connection.execute(text(MlflowSql.INSERT_RUN), run_rows)
            if existing:
                self._update_existing(connection, existing)
            if tag_rows:
                connection.execute(text(MlflowSql.INSERT_TAG), tag_rows)
            if param_rows:
                connection.execute(text(MlflowSql.INSERT_PARAM), param_rows)
            if metric_rows:
                connection.execute(text(MlflowSql.INSERT_METRIC), metric_rows)
                self._write_latest(connection, metric_rows, [run.run_id for run in existing])

    def _update_existing(self, connection: Any, runs: Sequence[BulkRun]) -> None:
        from sqlalchemy import text

        tags = [row for run in runs for row in _rows(run.run_id, run.tags)]
        if tags:
            keys = [{"run_uuid": row["run_uuid"], "key": row["key"]} for row in tags]
            connection.execute(text(MlflowSql.DELETE_TAG), keys)
            connection.execute(text(MlflowSql.INSERT_TAG), tags)
        names = [
            {"run_uuid": run.run_id, "name": run.tags[RUN_NAME_TAG]}
            for run in runs
            if RUN_NAME_TAG in run.tags
        ]
        if names:
            connection.execute(text(MlflowSql.SET_NAME), names)
        ended = [
            {"run_uuid": run.run_id, "status": run.terminal, "end_time": run.end_time}
            for run in runs
            if run.terminal is not None
        ]
        if ended:
            connection.execute(text(MlflowSql.SET_STATUS), ended)

    def _write_latest(
        self, connection: Any, metric_rows: Iterable[dict[str, Any]], existing: Sequence[str]
    ) -> None:
        """Each (run, key)'s latest point: the greatest by (step, timestamp, value), replacing
        the stored one only where it is greater, as MLflow does."""
        from sqlalchemy import text

        latest: dict[tuple[str, str], dict[str, Any]] = {}
        for row in metric_rows:
            pair = (row["run_uuid"], row["key"])
            if pair not in latest or _order(row) > _order(latest[pair]):
                latest[pair] = row
        stored: dict[tuple[str, str], tuple[Any, ...]] = {}
        query = MlflowSql.LATEST_IN
        for run_uuid, key, step, timestamp, value in _select_in(connection, query, existing):
            stored[(run_uuid, key)] = (step, timestamp, value)
        replaced, written = [], []
        for pair, row in latest.items():
            old = stored.get(pair)
            if old is None or _order(row) > old:
                written.append(row)
                if old is not None:
                    replaced.append({"run_uuid": pair[0], "key": pair[1]})
        if replaced:
            connection.execute(text(MlflowSql.DELETE_LATEST), replaced)
        if written:
            connection.execute(text(MlflowSql.INSERT_LATEST), written)

    def existing(self, run_ids: Sequence[str], *, active: bool = False) -> set[str]:
        """Which of `run_ids` are runs of the store (with `active`, runs not deleted)."""
        query = MlflowSql.ACTIVE_RUNS_IN if active else MlflowSql.RUNS_IN
        with self._engine.connect() as connection:
            return {row[0] for row in _select_in(connection, query, run_ids)}


def _select_in(connection: Any, query: str, values: Sequence[str]) -> list[Any]:
    """The rows of `query` (ending in ``IN``) over `values`, 500 at a time."""
    from sqlalchemy import bindparam, text

    statement = text(f"{query} :values").bindparams(bindparam("values", expanding=True))
    rows: list[Any] = []
    for start in range(0, len(values), 500):
        rows += connection.execute(statement, {"values": list(values[start : start + 500])}).all()
    return rows


def _order(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["step"], row["timestamp"], row["value"])


def _rows(run_id: str, items: dict[str, str]) -> list[dict[str, Any]]:
    return [{"key": key, "value": value, "run_uuid": run_id} for key, value in items.items()]
