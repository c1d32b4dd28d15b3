"""A tracking URI is checked before anything starts or is written.

MLflow meets a URI it cannot use only when the first run is created: after Ray has started and
the sweep's run folder was written. An unknown scheme then ends the sweep with MLflow's
exception, and a tracking server or database that does not answer keeps MLflow's client
retrying for minutes, in silence. The scheme is known without MLflow, and one TCP connection to
the server's port answers in milliseconds, so a typo fails at once with one line (exit 2).

A read must not create the store it reads: MLflow makes a local store that is not there (a
SQLite file, a file store's folder) as soon as a client opens it. `check_sweep_store` refuses
such a URI, so `sweeplab ls`, `best`, `report`, `compare` and `ui` write nothing.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

from sweeplab._net import no_answer
from sweeplab.tracking._bulk import redacted
from sweeplab.tracking._history import store_scheme
from sweeplab.tracking._read import UnknownSweepError
from sweeplab.tracking._sqlite import sqlite_store_path
from sweeplab.tracking._tracker import TrackingError

__all__ = ["check_sweep_store", "check_tracking_uri"]

# The stores MLflow's tracking client opens, by scheme (a SQL scheme may name its driver:
# ``postgresql+psycopg``), and the port a server of that kind listens on when none is given.
_SERVERS = {"http": 80, "https": 443, "postgresql": 5432, "mysql": 3306, "mssql": 1433}
_OTHERS = ("sqlite", "file", "databricks", "databricks-uc", "uc")
_FORMS = (
    "sqlite:///PATH, postgresql://USER@HOST:PORT/DB (also mysql, mssql), http(s)://HOST:PORT "
    "(an `mlflow server`), file:PATH or a folder"
)


def check_tracking_uri(uri: str | None) -> None:
    """Raises unless MLflow can open `uri` (else ``MLFLOW_TRACKING_URI``), as far as can be
    told without opening it: a known scheme, and for a server or a database, something that
    accepts a connection at its host and port. None and no variable: MLflow's local default.

    Raises:
        TrackingError: An unknown scheme, a SQLite file whose folder cannot be made, or a
            server that does not answer (the message says which, and what was asked for).
    """
    uri = uri or os.environ.get("MLFLOW_TRACKING_URI")
    if not uri:
        return
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    kind = store_scheme(uri)
    if _is_path(scheme):
        return
    shown = redacted(uri)
    if kind not in _SERVERS and kind not in _OTHERS:
        raise TrackingError(
            f"--tracking-uri {shown!r}: MLflow has no tracking store of scheme {scheme!r}; "
            f"use {_FORMS}."
        )
    if kind == "sqlite":
        _check_sqlite(sqlite_store_path(uri), shown)
        return
    if kind not in _SERVERS or parts.hostname is None:  # no host: a local socket, or a service
        return
    try:
        port = parts.port or _SERVERS[kind]
    except ValueError:
        raise TrackingError(f"--tracking-uri {shown!r}: the port is not a number.") from None
    reason = no_answer(parts.hostname, port)
    if reason is not None:
        what = "MLflow tracking server" if kind in ("http", "https") else f"{kind} database"
        raise TrackingError(
            f"no {what} answers at --tracking-uri {shown} ({reason}); start it, or check the URI."
        )


def _check_sqlite(path: str | None, shown: str) -> None:
    """The folder of a SQLite store's file (None: in memory) must be a folder, or be creatable."""
    if path is None:
        return
    folder = Path(path).parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise TrackingError(
            f"--tracking-uri {shown!r}: cannot make the store's folder, {folder} is a file."
        )


def check_sweep_store(uri: str, sweep: str | None = None) -> None:
    """Raises where the resolved tracking URI `uri` names a local store that is not there,
    which MLflow would create on opening it.

    A SQLite store is there where its file is (one in memory always is). A file store
    (``file:PATH``, or a path) is there where its folder holds MLflow's ``.trash`` folder or
    an experiment (a numbered folder with a ``meta.yaml``: how MLflow tells an ``mlruns``
    folder that holds data). A server or a database is asked by `check_tracking_uri`.

    Raises:
        UnknownSweepError: No store at `uri`; the message names it, and `sweep` where given.
    """
    path = sqlite_store_path(uri)
    if path is not None:
        missing = not os.path.exists(path)
    else:
        folder = _file_store_folder(uri)
        missing = folder is not None and not _holds_file_store(folder)
    if not missing:
        return
    what = "No sweeps" if sweep is None else f"No sweep named {sweep!r}"
    raise UnknownSweepError(
        f"{what}: the tracking store {uri!r} does not exist (`sweeplab sweep SPEC` creates it)."
    )


def _is_path(scheme: str) -> bool:
    """Whether a URI of this scheme is a path (no scheme; ``C:\\...`` on Windows)."""
    return not scheme or (len(scheme) == 1 and os.name == "nt")


def _file_store_folder(uri: str) -> Path | None:
    """The folder of a file store's URI (``file:PATH`` or a path), ``None`` for anything else."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if _is_path(scheme):
        return Path(uri)
    if scheme == "file":
        return Path(url2pathname(parts.path))
    return None


def _holds_file_store(folder: Path) -> bool:
    if (folder / ".trash").is_dir():
        return True
    try:
        return any(
            entry.name.isdigit() and (entry / "meta.yaml").exists() for entry in folder.iterdir()
        )
    except OSError:  # not there, or not a folder
        return False
