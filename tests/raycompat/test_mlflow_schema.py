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
    module = Path(raycompat.__file__)
    outside = {
        f"{file.relative_to(module.parent)}: {match.group(0)}"
        for file in sorted(module.parent.rglob("*.py"))
        if file != module
        for match in TABLE_SQL.finditer(file.read_text())
    }
    assert outside == set()
