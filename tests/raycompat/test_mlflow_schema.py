"""sweeplab's statements on MLflow's tables still fit the schema MLflow creates.

MLflow documents its client and REST API, not the tables of a SQL store. Every statement
sweeplab runs on them is in `raycompat.MlflowSql`, and each table and column it names is a row
of `raycompat.MLFLOW_SCHEMA_USES`; an MLflow upgrade that changes them fails here.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from pathlib import Path

import pytest

from sweeplab import raycompat
from sweeplab.raycompat import MLFLOW_SCHEMA_USES, MlflowSql

STATEMENTS = {
    name: value
    for name, value in vars(MlflowSql).items()
    if name.isupper() and isinstance(value, (str, tuple))
}
# MLflow's tables, as the statements outside raycompat would name them.
TABLE_SQL = re.compile(
    r"\b(INSERT INTO|DELETE FROM|UPDATE|FROM|JOIN)\s+"
    r"(runs|tags|params|metrics|latest_metrics|experiments|experiment_tags)\b"
)


@pytest.fixture(scope="module")
def mlflow_schema(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store that MLflow itself created, with its migrations (no sweeplab template)."""
    import mlflow

    path = tmp_path_factory.mktemp("schema") / "mlflow.db"
    mlflow.MlflowClient(tracking_uri=f"sqlite:///{path}").search_experiments()
    return path


def _columns(path: Path, table: str) -> set[str]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


@pytest.mark.parametrize("use", MLFLOW_SCHEMA_USES, ids=lambda use: use.table)
def test_every_table_and_column_is_in_mlflows_schema(mlflow_schema: Path, use: object) -> None:
    assert isinstance(use, raycompat.SchemaUse)
    assert set(use.columns) <= _columns(mlflow_schema, use.table), use.why


@pytest.mark.parametrize("name", sorted(STATEMENTS))
def test_every_statement_compiles_on_mlflows_schema(mlflow_schema: Path, name: str) -> None:
    value = STATEMENTS[name]
    with contextlib.closing(sqlite3.connect(mlflow_schema)) as db:
        for statement in value if isinstance(value, tuple) else (value,):
            if statement.endswith(" IN"):  # completed by an expanding parameter
                statement += " (NULL)"
            named = {key: None for key in re.findall(r":(\w+)", statement)}
            params: object = named or (None,) * statement.count("?")
            db.execute(f"EXPLAIN {statement}", params)  # raises on a missing table or column


def test_every_table_a_statement_names_has_a_row() -> None:
    rows = {use.table for use in MLFLOW_SCHEMA_USES}
    named = {
        table
        for value in STATEMENTS.values()
        for statement in (value if isinstance(value, tuple) else (value,))
        for _, table in TABLE_SQL.findall(statement)
    }
    assert named == rows


def test_no_module_outside_raycompat_runs_sql_on_mlflows_tables() -> None:
    """STYLE.md rule 9: MLflow's tables are its private API, used from raycompat only."""
    package = Path(raycompat.__file__).parent
    outside = {
        f"{file.relative_to(package.parent)}: {match.group(0)}"
        for file in sorted(package.parent.rglob("*.py"))
        if package not in file.parents
        for match in TABLE_SQL.finditer(file.read_text())
    }
    assert outside == set()


def _engine(path: Path) -> object:
    from sqlalchemy import create_engine

    return create_engine(f"sqlite:///{path}")


def _copy(source: Path, folder: Path) -> Path:
    target = folder / "copy.db"
    target.write_bytes(source.read_bytes())
    return target


def test_the_installed_mlflows_schema_revision_is_one_sweeplab_checked(
    mlflow_schema: Path,
) -> None:
    # An MLflow upgrade that moves the head fails here, one clear test: check the rows above
    # on the new schema, then add its revision to MLFLOW_SCHEMA_REVISIONS.
    with contextlib.closing(sqlite3.connect(mlflow_schema)) as db:
        (revision,) = db.execute("SELECT version_num FROM alembic_version").fetchone()
    assert revision in raycompat.MLFLOW_SCHEMA_REVISIONS


@pytest.mark.parametrize(
    ("change", "mismatch"),
    [
        (None, None),
        # Another revision whose tables still have every column sweeplab writes: it fits.
        ("UPDATE alembic_version SET version_num = 'ffffffffffff'", None),
        # Another revision without a column sweeplab writes: refused, the column named.
        (
            "UPDATE alembic_version SET version_num = 'ffffffffffff'; "
            "ALTER TABLE tags DROP COLUMN value",
            "its MLflow schema (revision ffffffffffff) lacks tags.value",
        ),
        ("DROP TABLE alembic_version", "it has no MLflow schema revision"),
    ],
)
def test_a_stores_schema_is_checked_before_sweeplab_writes_to_it(
    mlflow_schema: Path, tmp_path: Path, change: str | None, mismatch: str | None
) -> None:
    path = _copy(mlflow_schema, tmp_path)
    if change:
        with contextlib.closing(sqlite3.connect(path)) as db:
            db.executescript(change)
    engine = _engine(path)
    with engine.connect() as connection:  # type: ignore[attr-defined]
        found = raycompat.mlflow_schema_mismatch(connection)
    engine.dispose()  # type: ignore[attr-defined]
    if mismatch is None:
        assert found is None
    else:
        assert found is not None and found.startswith(mismatch)


def test_a_store_whose_schema_does_not_fit_is_written_through_mlflows_client(
    mlflow_schema: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    from sweeplab.tracking._bulk import sql_bulk

    path = _copy(mlflow_schema, tmp_path)
    uri = f"sqlite:///{path}"
    assert sql_bulk(uri, "0") is not None  # MLflow's own schema: bulk writes
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(
            "UPDATE alembic_version SET version_num = 'ffffffffffff'; "
            "ALTER TABLE tags DROP COLUMN value"
        )
    with caplog.at_level(logging.WARNING, logger="sweeplab.tracking"):
        assert sql_bulk(uri, "0") is None
    (warning,) = [r for r in caplog.records if "not in bulk" in r.getMessage()]
    assert "lacks tags.value" in warning.getMessage()
