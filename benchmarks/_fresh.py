"""One arm of a benchmark in a fresh Python process, on a spec written for it: `run_fresh` on
the benchmark's side, `sweep_untracked` in the arm's script."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["chosen_arms", "run_fresh", "sweep_untracked"]

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


def sweep_untracked(folder: Path, callbacks: Sequence[Any] = ()) -> tuple[Any, float]:
    """In an arm's script: the sweep of ``folder/spec.py`` on a new local Ray of 2 CPUs,
    untracked, with the sweep `callbacks`; returns its outcome and its wall time in seconds."""
    import ray

    from sweeplab.engine import SweepOptions, run_sweep
    from sweeplab.spec import load_spec

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    spec = folder / "spec.py"
    options = SweepOptions(
        spec_path=spec, storage=folder / "runs", live=False, track=False, callbacks=list(callbacks)
    )
    begin = time.perf_counter()
    outcome = run_sweep(load_spec(spec), options)
    return outcome, time.perf_counter() - begin


def chosen_arms(parser: argparse.ArgumentParser, text: str, arms: Sequence[str]) -> list[str]:
    """The arms that ``--arms`` names (comma-separated); an unknown one is the parser's error."""
    chosen = [arm for arm in text.split(",") if arm]
    unknown = sorted(set(chosen) - set(arms))
    if unknown:
        parser.error(f"unknown arm(s) {unknown}; choose from {', '.join(arms)}")
    return chosen
