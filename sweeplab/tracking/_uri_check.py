"""A tracking URI is checked before anything starts or is written.

MLflow meets a URI it cannot use only when the first run is created: after Ray has started and
the sweep's run folder was written. An unknown scheme then ends the sweep with MLflow's
exception, and a tracking server or database that does not answer keeps MLflow's client
retrying for minutes, in silence. The scheme is known without MLflow, and one TCP connection to
the server's port answers in milliseconds, so a typo fails at once with one line (exit 2).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from sweeplab._net import no_answer
from sweeplab.tracking._bulk import redacted
from sweeplab.tracking._history import store_scheme
from sweeplab.tracking._sqlite import sqlite_store_path
from sweeplab.tracking._tracker import TrackingError

__all__ = ["check_tracking_uri"]

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
    if not scheme or (len(scheme) == 1 and os.name == "nt"):  # a path (C:\... on Windows)
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
