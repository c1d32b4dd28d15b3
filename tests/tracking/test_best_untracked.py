"""The best config comes from the ranking: an untracked sweep has the same best as a tracked one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SPEC = """
import os
import tempfile

from ray import train

import sweeplab


def train_func(config):
    for step in range(3):
        loss = (config["x"] - 0.3) ** 2 + 1.0 / (step + 1)
        with tempfile.TemporaryDirectory() as folder:
            open(os.path.join(folder, "w.txt"), "w").close()
            train.report({"loss": loss}, checkpoint=train.Checkpoint.from_directory(folder))


sweep = sweeplab.Sweep(
    name="same-best", train_func=train_func, space={"x": sweeplab.grid([0.1, 0.35, 0.9])},
    metric="loss", mode="min", searcher="grid", scheduler="fifo", num_trials=1,
    max_iterations=3, max_concurrent_trials=1,
)
"""

MLFLOW_KEYS = ("trial_id", "checkpoint", "mlflow_run_id", "parent_run_id", "tracking_uri")


def test_untracked_sweep_has_the_tracked_best(ray_local: None, in_tmp: Path) -> None:
    from sweeplab.engine import SweepOptions, run_sweep
    from sweeplab.spec import load_spec

    spec = in_tmp / "same.py"
    spec.write_text(SPEC)
    best = {}
    for track in (True, False):
        storage = in_tmp / f"runs-{track}"
        outcome = run_sweep(
            load_spec(spec), SweepOptions(spec_path=spec, storage=storage, live=False, track=track)
        )
        assert outcome.errored == 0
        written = json.loads((storage / "same-best" / "best_config.json").read_text())
        assert written == json.loads((outcome.storage_dir / "best_config.json").read_text())
        assert outcome.best == written
        assert [t.rank for t in outcome.summary.trials] == [1, 2, 3]
        assert Path(written["checkpoint"]).is_dir()
        best[track] = written

    assert best[True]["config"] == best[False]["config"] == {"x": 0.35}
    assert best[False]["value"] == pytest.approx((0.35 - 0.3) ** 2 + 1 / 3)
    assert {k: v for k, v in best[True].items() if k not in MLFLOW_KEYS} == {
        k: v for k, v in best[False].items() if k not in MLFLOW_KEYS
    }
    assert best[True]["parent_run_id"] and best[False]["parent_run_id"] is None
    assert best[False]["mlflow_run_id"] is None and best[False]["tracking_uri"] is None
