"""One arm of a benchmark in a fresh Python process, on a spec written for it."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["run_fresh"]

ROOT = Path(__file__).resolve().parents[1]


def run_fresh(arm: str, script: str, spec: str, *, timeout_s: int = 1800) -> dict[str, Any]:
    """Writes `spec` as ``spec.py`` in a new temporary folder, runs `script` in a fresh
    process with that folder as its argument, and returns the JSON of its last line.

    Raises:
        RuntimeError: If the script fails (the end of its error output is in the message).
    """
    with tempfile.TemporaryDirectory(prefix=f"sweeplab-bench-{arm}-") as tmp:
        folder = Path(tmp)
        (folder / "spec.py").write_text(spec)
        done = subprocess.run(
            [sys.executable, "-c", script, str(folder)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        if done.returncode != 0:
            raise RuntimeError(f"arm {arm} failed:\n{done.stderr[-3000:]}")
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))
