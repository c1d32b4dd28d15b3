"""An empty MLflow SQLite store for a test: the product's own copy of its store template.

MLflow makes a new SQLite store by running its schema migrations, about a second here. Tests
that need a store before a sweep opens it (to read an empty one, to write to it first) get
one the way a sweep's tracker creates it: `sweeplab.tracking`'s store template, copied.
"""

from __future__ import annotations

from pathlib import Path

from sweeplab.tracking._new_store import seed_sqlite_store


def store_uri(folder: Path, name: str = "mlflow.db") -> str:
    """Puts an empty store at ``folder/name`` (unless one is there) and returns its URI."""
    folder.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{folder / name}"
    if not (folder / name).exists() and not seed_sqlite_store(uri):
        import mlflow

        mlflow.MlflowClient(uri).search_experiments()  # MLflow's migrations, as a fallback
    return uri
