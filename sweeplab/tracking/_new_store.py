"""A new SQLite tracking store starts as a copy of an empty one, not by running MLflow's migrations.

MLflow creates a new SQLite store by running its 60-odd schema migrations one after another:
about a second on this project's test machine, paid by every first sweep into a new
``mlflow.db`` (the quickstart, each notebook, most tests). The empty store those migrations
leave is the same for every store of one MLflow version, except for the ``Default`` experiment,
whose artifact location depends on where the store is opened.

So the first time a version of MLflow creates a store, that store, without its ``Default``
experiment, is kept as a template in the user's cache folder (``$XDG_CACHE_HOME/sweeplab``, else
``~/.cache/sweeplab``). Each later new store is a copy of it (under a millisecond), and MLflow
adds the ``Default`` experiment itself when it opens the copy, as it does for any store that
lacks one; its schema check passes, as the schema is its own.

Only a file that does not exist yet is created; an existing store is never touched. If the
cache cannot be written, or anything else fails, MLflow creates the store as before.
``SWEEPLAB_STORE_TEMPLATE=0`` turns the template off.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import sqlite3
from pathlib import Path

from sweeplab.tracking._sqlite import sqlite_store_path

__all__ = ["TEMPLATE_ENV", "seed_sqlite_store", "store_template"]

TEMPLATE_ENV = "SWEEPLAB_STORE_TEMPLATE"

logger = logging.getLogger(__name__)


def _cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "sweeplab"


def _place(source: Path, target: Path) -> bool:
    """Copies `source` to `target` if `target` does not exist, atomically; whether it did.

    The copy is written beside `target` and hard-linked into place, so that a reader never
    sees half a file and, of two processes creating the same store, exactly one wins.
    """
    # Not `mkstemp`: the store gets the permissions of any new file (the umask's), not 0600.
    partial = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        shutil.copyfile(source, partial)
        os.link(partial, target)
    except FileExistsError:
        return False
    finally:
        partial.unlink(missing_ok=True)
    return True


def _build_template(path: Path) -> None:
    """Has MLflow create an empty store, then drops its `Default` experiment."""
    import mlflow

    work = path.with_name(f".{path.name}.{os.getpid()}.build")
    work.unlink(missing_ok=True)
    try:
        # Any read opens the store, and opening an empty file runs the migrations.
        mlflow.MlflowClient(tracking_uri=f"sqlite:///{work}").search_experiments()
        with contextlib.closing(sqlite3.connect(work)) as db:
            db.execute("DELETE FROM experiment_tags WHERE experiment_id = 0")
            db.execute("DELETE FROM experiments WHERE experiment_id = 0")
            db.commit()
            db.execute("VACUUM")
        # Another process may have built it meanwhile: either copy is the same.
        os.replace(work, path)
    finally:
        work.unlink(missing_ok=True)


def store_template() -> Path | None:
    """The empty store of the installed MLflow version, built on first use; None if unavailable."""
    import mlflow

    path = _cache_dir() / f"mlflow-{mlflow.__version__}-empty.db"
    if path.is_file():
        return path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _build_template(path)
    except Exception as error:
        logger.debug("No tracking store template at %s: %s", path, error)
        return None
    return path


def seed_sqlite_store(uri: str) -> bool:
    """Creates the SQLite store of `uri` as a copy of the template if its file does not exist.

    Returns whether it did. Anything but a ``sqlite:///`` file URI, an existing file, a missing
    folder, ``SWEEPLAB_STORE_TEMPLATE=0`` or a failure leaves it to MLflow.
    """
    if os.environ.get(TEMPLATE_ENV, "1").strip().lower() in ("0", "false", "no"):
        return False
    name = sqlite_store_path(uri)
    if name is None:
        return False
    target = Path(name)
    if target.exists() or not target.parent.is_dir():
        return False
    template = store_template()
    if template is None:
        return False
    try:
        return _place(template, target)
    except OSError as error:
        logger.debug("Could not copy the store template to %s: %s", target, error)
        return False
