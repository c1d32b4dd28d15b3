"""A real `mlflow server` process on 127.0.0.1 for the tracking tests."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class MlflowServer:
    """A real ``mlflow server`` subprocess on 127.0.0.1, its artifacts and log in a folder.

    Its backend store is ``backend_store_uri`` (a PostgreSQL database, say), by default a SQLite
    file in the folder.
    """

    def __init__(
        self, root: Path, port: int | None = None, backend_store_uri: str | None = None
    ) -> None:
        self.root = root
        self.backend_store_uri = backend_store_uri or f"sqlite:///{root / 'mlflow.db'}"
        self.port = port or free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 90.0) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        log = (self.root / "server.log").open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable, "-m", "mlflow", "server",
                "--host", "127.0.0.1",
                "--port", str(self.port),
                "--workers", "1",
                "--backend-store-uri", self.backend_store_uri,
                "--serve-artifacts",
                "--artifacts-destination", str(self.root / "artifacts"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
            start_new_session=True,  # its uvicorn and job workers are stopped as one group
        )  # fmt: skip
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"mlflow server exited: {(self.root / 'server.log').read_text()}"
                )
            try:
                with urllib.request.urlopen(f"{self.uri}/health", timeout=1) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError("mlflow server did not answer /health in time")

    def stop(self) -> None:
        if self.process is None:
            return
        group = self.process.pid  # the process group of the server and its workers
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=15)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
        self.process.wait()
        self.process = None
