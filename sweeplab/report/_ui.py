"""``sweeplab ui``: the MLflow UI on a local tracking store, and no server left behind.

The server runs under a guard: a small process in its own session that starts the server in a
process group of its own and ends that whole group (uvicorn's workers included) as soon as the
``sweeplab ui`` process is gone, however it went (Ctrl-C, SIGTERM, SIGKILL). The guard learns
of that from a pipe whose only writer is ``sweeplab ui``: the kernel closes it when the process
dies, and the guard reads end-of-file.

The guard is `sweeplab.report._ui_guard`, a module of its own so that ``python -m`` runs it
without this package's modules imported first.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DEFAULT_URI = "sqlite:///mlflow.db"
_GUARD = "sweeplab.report._ui_guard"
GRACE_S = 5.0


# Sorted by creation time (the default), MLflow's runs page folds the trial runs under their
# collapsed parent; sorted by anything else it lists them all. sweeplab tags each trial run with
# its rank, zero-padded so that it sorts as text; MLflow sorts runs without the tag (the parent
# run) last.
_BY_RANK = "orderByKey=tags.%60sweeplab.rank%60&orderByAsc=true"


def runs_url(root: str, experiment_id: str) -> str:
    """The MLflow UI's page of an experiment's training runs (MLflow 3's hash route), listing
    every run sorted by rank: a sweep's trials best first, then its parent run."""
    return f"{root.rstrip('/')}/#/experiments/{experiment_id}/runs?{_BY_RANK}"


def sweep_experiments(tracking_uri: str, sweep: str | None = None) -> list[tuple[str, str]]:
    """``(sweep name, experiment id)`` of one sweep, or of every sweep in the store (newest
    first; none when a SQLite store does not exist yet, which this does not create).

    Raises:
        UnknownSweepError: ``sweep`` is not in the tracking store.
    """
    from sweeplab.tracking import check_sweep_store, latest_sweep_run, list_sweeps, tracking_client

    if sweep is not None:
        check_sweep_store(tracking_uri, sweep)
        client, uri = tracking_client(tracking_uri)
        parent = latest_sweep_run(client, sweep, uri)
        return [(sweep, str(parent.info.experiment_id))]
    if tracking_uri.startswith("sqlite:///") and not Path(tracking_uri[10:]).exists():
        return []
    client, _ = tracking_client(tracking_uri)
    pages = []
    for name in list_sweeps(tracking_uri)["sweep"]:
        experiment = client.get_experiment_by_name(name)
        if experiment is not None:
            pages.append((str(name), str(experiment.experiment_id)))
    return pages


def mlflow_ui_command(tracking_uri: str, port: int) -> list[str]:
    """The MLflow UI on ``tracking_uri``, bound to 127.0.0.1."""
    return [
        sys.executable,
        "-m",
        "mlflow",
        "ui",
        "--backend-store-uri",
        tracking_uri,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]


class _Stop(Exception):
    """SIGTERM, raised in the main thread so that the server is ended before exiting."""


def _raise_stop(signum: int, frame: Any) -> None:
    raise _Stop


def serve(command: Sequence[str], *, grace_s: float = GRACE_S) -> int:
    """Runs ``command`` under a guard until it exits, Ctrl-C or SIGTERM; returns its status
    (0 when stopped). When this process dies in any way, the guard ends the command's whole
    process group: SIGTERM, then SIGKILL after ``grace_s``."""
    read_fd, write_fd = os.pipe()
    guard = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sweeplab.report._ui_guard",
            str(read_fd),
            str(grace_s),
            "--",
            *command,
        ],
        pass_fds=(read_fd,),
        # Its own session: Ctrl-C in the terminal reaches this process only, which then ends the
        # server in order, rather than the server's workers each handling SIGINT on their own.
        start_new_session=True,
    )
    os.close(read_fd)
    previous = signal.signal(signal.SIGTERM, _raise_stop)
    try:
        return guard.wait()
    except (KeyboardInterrupt, _Stop):
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
        os.close(write_fd)  # the guard reads end-of-file and ends the server's group
        try:
            guard.wait(timeout=grace_s + 10)
        except subprocess.TimeoutExpired:
            guard.kill()
