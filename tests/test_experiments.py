"""Every experiment in experiments/ runs end to end, at tiny scale, through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "experiments"

# Each experiment, the flags and environment that make it tiny, and its metric's sanity floor.
TINY = {
    "quickstart.py": (["--num-trials", "2"], {"QUICKSTART_EPOCHS": "2"}, 0.5),
}


def test_every_experiment_has_a_tiny_run() -> None:
    assert sorted(p.name for p in EXPERIMENTS.glob("*.py") if not p.name.startswith("_")) == sorted(
        TINY
    )


@pytest.mark.parametrize("name", sorted(TINY))
def test_experiment_runs(name: str, tmp_path: Path) -> None:
    flags, env, floor = TINY[name]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sweeplab.cli",
            "sweep",
            str(EXPERIMENTS / name),
            "--no-live",
            *flags,
        ],
        cwd=tmp_path,
        env={**os.environ, **env, "COLUMNS": "120"},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    (best_file,) = tmp_path.glob("sweeplab-runs/*/best_config.json")
    best = json.loads(best_file.read_text())
    assert best["value"] >= floor
    assert Path(best["checkpoint"]).is_dir()
    assert (tmp_path / "mlflow.db").exists()
    shown = subprocess.run(
        [sys.executable, "-m", "sweeplab.cli", "best", best["sweep"], "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["trial_id"] == best["trial_id"]
    assert json.loads(shown.stdout)["config"] == best["config"]
