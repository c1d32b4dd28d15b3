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

Only a file that does not exist yet is created (and its folder, as MLflow does); an existing
store is never touched. If the
cache cannot be written, or anything else fails, MLflow creates the store as before.
``SWEEPLAB_STORE_TEMPLATE=0`` turns the template off.

Opening a store costs more than its creation: importing MLflow and its SQL store is about 2.5 s
of CPU. `open_store_in_background` does that in a thread while Ray starts and the sweep's slots
come up (which mostly wait on other processes); `prepare_store`, the first step of
`SweepTracker.start`, then waits for it and finds MLflow's store already open.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import sqlite3
import threading
from pathlib import Path

from sweeplab.raycompat import MlflowSql
from sweeplab.tracking._read import resolve_tracking_uri
from sweeplab.tracking._sqlite import sqlite_store_path, write_ahead_log

__all__ = [
    "TEMPLATE_ENV",
    "open_store_in_background",
    "prepare_store",
    "seed_sqlite_store",
    "store_template",
]

TEMPLATE_ENV = "SWEEPLAB_STORE_TEMPLATE"

logger = logging.getLogger(__name__)

# Stores being opened in the background; `prepare_store` waits for them.
_opening: list[threading.Thread] = []
_opening_lock = threading.Lock()


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
            for statement in MlflowSql.DROP_DEFAULT_EXPERIMENT:
                db.execute(statement)
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

    Returns whether it did. Its folder is created, as MLflow does. Anything but a ``sqlite:///``
    file URI, an existing file, ``SWEEPLAB_STORE_TEMPLATE=0`` or a failure leaves it to MLflow.
    """
    if os.environ.get(TEMPLATE_ENV, "1").strip().lower() in ("0", "false", "no"):
        return False
    name = sqlite_store_path(uri)
    if name is None:
        return False
    target = Path(name)
    if target.exists():
        return False
    template = store_template()
    if template is None:
        return False
    try:
        target.parent.mkdir(parents=True, exist_ok=True)  # as MLflow does for a new store
        return _place(template, target)
    except OSError as error:
        logger.debug("Could not copy the store template to %s: %s", target, error)
        return False


def prepare_store(tracking_uri: str | None) -> str:
    """Makes the tracking store of `tracking_uri` ready to write to; returns its resolved URI.

    Waits for stores being opened in the background, resolves the URI (MLflow's own when
    None), creates a new SQLite store from the template and puts a SQLite store in WAL mode
    (see `write_ahead_log`) before MLflow opens a connection to it.
    """
    with _opening_lock:
        opening = [t for t in _opening if t is not threading.current_thread()]
    for thread in opening:
        thread.join()
    resolved = resolve_tracking_uri(tracking_uri)
    seed_sqlite_store(resolved)
    write_ahead_log(resolved)
    return resolved


def _open(tracking_uri: str | None) -> None:
    try:
        from mlflow import MlflowClient

        resolved = prepare_store(tracking_uri)
        # Any read opens the store; MLflow keeps it open for every client of this URI.
        MlflowClient(resolved).search_experiments(max_results=1)
    except Exception as error:
        logger.debug("Opening the tracking store %s in the background: %s", tracking_uri, error)
    finally:
        with _opening_lock:
            _opening.remove(threading.current_thread())


def open_store_in_background(tracking_uri: str | None) -> threading.Thread:
    """Starts opening the tracking store of `tracking_uri` (see `prepare_store`) in a thread.

    Any error is left for `SweepTracker.start` to report. Modules the thread imports are
    imported only by it while it runs: Ray's, Tune's and Train's are imported here first, so
    that two threads never import the same packages at once.
    """
    import ray.train
    import ray.tune  # noqa: F401

    thread = threading.Thread(
        target=_open, args=(tracking_uri,), name="sweeplab-open-store", daemon=True
    )
    with _opening_lock:
        _opening.append(thread)
    thread.start()
    return thread
