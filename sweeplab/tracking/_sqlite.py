"""A SQLite tracking store that a sweep writes to: write-ahead log, no disk sync per commit.

MLflow commits each call (a child run's creation, each part of a ``log_batch``, a status
update) in a transaction of its own, about a dozen per trial. SQLite's defaults (a rollback
journal, ``synchronous=FULL``) sync the disk at every commit: 16 ms a commit on this project's
test machine, so most of what tracking cost per trial. In WAL mode with ``synchronous=NORMAL``
a commit is appended to the log without a sync, and the log is synced at checkpoints.

What that keeps and what it gives up: a killed driver, worker or reader loses nothing that was
committed, and the store never becomes inconsistent; an operating-system crash or a power loss
may lose the last commits before it. Readers (``mlflow ui``, ``sweeplab report`` while a sweep
runs) read a WAL store as before, and no longer wait for the writer. WAL needs the store on a
local file system (not NFS). ``SWEEPLAB_SQLITE_WAL=0`` keeps MLflow's defaults.

Only connections to the stores a sweep tracks into in this process are changed; any other
SQLite database the process opens (an Optuna study, the user's own) is left as it is.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from typing import Any
from urllib.parse import unquote

__all__ = ["WAL_ENV", "sqlite_store_path", "write_ahead_log"]

WAL_ENV = "SWEEPLAB_SQLITE_WAL"
_PREFIX = "sqlite:///"

_stores: set[str] = set()
_lock = threading.Lock()
_listening = False


def sqlite_store_path(uri: str) -> str | None:
    """The file of a ``sqlite:///`` tracking URI (its real path), ``None`` for anything else.

    The path is %-decoded, as SQLAlchemy decodes it: MLflow's default URI of a folder whose
    name has a space in it reads ``sqlite:////my%20runs/mlflow.db``.
    """
    if not uri.startswith(_PREFIX):
        return None
    path = unquote(uri[len(_PREFIX) :].split("?", 1)[0])
    if path in ("", ":memory:"):
        return None
    return os.path.realpath(path)


def _main_file(connection: sqlite3.Connection) -> str:
    for _, name, file in connection.execute("PRAGMA database_list").fetchall():
        if name == "main":
            return str(file or "")
    return ""


def _on_connect(dbapi_connection: Any, _record: Any) -> None:
    if not isinstance(dbapi_connection, sqlite3.Connection):
        return
    main = _main_file(dbapi_connection)
    if main and os.path.realpath(main) in _stores:
        dbapi_connection.execute("PRAGMA journal_mode=WAL")
        dbapi_connection.execute("PRAGMA synchronous=NORMAL")


def write_ahead_log(uri: str) -> bool:
    """Puts the SQLite store of `uri` in WAL mode for every connection this process opens to it
    from now on; returns whether it did (``False``: not a SQLite file, or turned off)."""
    global _listening
    path = sqlite_store_path(uri)
    if path is None or os.environ.get(WAL_ENV, "1").strip() in ("0", "false", "no"):
        return False
    with _lock:
        if not _listening:
            from sqlalchemy import event
            from sqlalchemy.engine import Engine

            event.listen(Engine, "connect", _on_connect)
            _listening = True
        _stores.add(path)
    return True
