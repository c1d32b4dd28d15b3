"""Input that must be refused before anything starts: a closed port, and the CLI's one line."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def refused_line(args: list[str], cwd: Path) -> str:
    """Runs ``sweeplab ARGS`` in `cwd`; checks it exits 2 with one line on stderr and wrote
    nothing into `cwd` (no storage folder, no MLflow store, no Ray log); returns the line."""
    before = sorted(cwd.rglob("*"))
    result = subprocess.run(
        [sys.executable, "-m", "sweeplab.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert sorted(cwd.rglob("*")) == before
    return lines[0]
