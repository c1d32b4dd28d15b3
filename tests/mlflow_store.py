"""An empty MLflow SQLite store for a test, copied from one made once per test process.

MLflow makes a new SQLite store by running its schema migrations, about 3 s here; an
end-to-end test that tracks into a fresh store paid that each time. The copy is a store MLflow
made itself, at the current schema, holding only MLflow's Default experiment, as a new store
does.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path


@functools.cache
def _template() -> Path:
    import mlflow

    folder = Path(tempfile.mkdtemp(prefix="sweeplab-mlflow-template-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    path = folder / "mlflow.db"
    mlflow.MlflowClient(f"sqlite:///{path}").search_experiments()
    return path


def store_uri(folder: Path, name: str = "mlflow.db") -> str:
    """Puts an empty store at ``folder/name`` (unless one is there) and returns its URI."""
    path = folder / name
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_template(), path)
    return f"sqlite:///{path}"
