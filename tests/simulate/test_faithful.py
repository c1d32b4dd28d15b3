"""The simulator is faithful: on real Ray, `run_sweep` makes the same trials and stops them alike.

Each case runs one small, deterministic sweep twice: on a local Ray through `run_sweep` (the
engine `sweeplab sweep` runs: the trial loop on warm slots), one trial at a time, with a
training function that reports a fixed learning curve; and through `sweeplab.simulate` with one
worker, against the same curve. The searcher is seeded, so both
must make the same configs in the same order, and the scheduler must stop each trial at the
same iteration.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sweeplab.simulation import simulate
from sweeplab.spec import load_spec

pytestmark = pytest.mark.slow

# Iteration 1 ranks the trials by `lr`, the last one by `x`: early stops are real decisions.
CURVE = """
def curve(config, iteration):
    loss = (config["x"] - 0.3) ** 2 + config["lr"] / iteration
    return {"loss": loss}, 1.0
"""

SPEC = """
import json
import tempfile
from pathlib import Path

from ray import train

import sweeplab
from sweeplab import loguniform, uniform
{curve}

def train_func(config):
    # A trial HyperBand pauses goes on from its last report's checkpoint when resumed; one
    # PBT exploits, from its donor's. Each report says whose config wrote the checkpoint the
    # run started from.
    start, restored = 1, None
    checkpoint = train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as folder:
            start = int((Path(folder) / "iteration").read_text()) + 1
            restored = json.loads((Path(folder) / "config.json").read_text())
    for iteration in range(start, {max_iterations} + 1):
        metrics, _ = curve(config, iteration)
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "iteration").write_text(str(iteration))
            (Path(folder) / "config.json").write_text(json.dumps(config))
            train.report(
                {{
                    **metrics,
                    "config_json": json.dumps(config, sort_keys=True),
                    "restored_json": json.dumps(restored, sort_keys=True),
                }},
                checkpoint=train.Checkpoint.from_directory(folder),
            )


sweep = sweeplab.Sweep(
    name="{name}",
    train_func=train_func,
    space={{"x": uniform(0, 1), "lr": loguniform(0.01, 1.0)}},
    metric="loss",
    mode="min",
    searcher="{searcher}",
    scheduler="{scheduler}",
    num_trials={num_trials},
    max_iterations={max_iterations},
    seed={seed},
    max_concurrent_trials=1,
)
"""


def the_curve() -> Any:
    namespace: dict[str, Any] = {}
    exec(CURVE, namespace)
    return namespace["curve"]


def real_trials(storage_dir: Path) -> list[tuple[dict[str, Any], int]]:
    """(config, reports) of each trial the sweep ran, in the order the searcher made them (the
    loop numbers its trials ``<prefix>_00000``, ``<prefix>_00001``, ...)."""
    trials = []
    for path in (storage_dir / "trials").glob("*/result.json"):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line]
        assert [row["training_iteration"] for row in rows] == list(range(1, len(rows) + 1))
        trials.append((path.parent.name, json.loads(rows[0]["config_json"]), len(rows)))
    return [(config, reports) for _, config, reports in sorted(trials, key=lambda t: t[0])]


@pytest.mark.parametrize(
    ("searcher", "scheduler", "seed"),
    [
        ("random", "fifo", 3),
        ("random", "asha", 3),
        ("optuna", "adaptive-asha", 5),
        ("optuna", "asha", 5),
        # HyperBand pauses trials at its rungs and resumes the best: the simulator resumes a
        # trial from its next iteration, as the real one resumes from its checkpoint.
        ("random", "hyperband", 3),
    ],
)
def test_real_ray_and_the_simulator_agree(
    ray_local: None, in_tmp: Path, searcher: str, scheduler: str, seed: int
) -> None:
    from sweeplab.engine import SweepOptions, run_sweep

    spec = in_tmp / "faithful.py"
    spec.write_text(
        SPEC.format(
            curve=CURVE,
            name=f"faithful-{searcher}-{scheduler}",
            searcher=searcher,
            scheduler=scheduler,
            num_trials=9,
            max_iterations=9,
            seed=seed,
        )
    )
    sweep = load_spec(spec)
    simulated = simulate(sweep, the_curve(), workers=1)
    expected = [(trial.config, trial.stopped_at) for trial in simulated.trials]
    if scheduler != "fifo":
        assert min(stops for _, stops in expected) < 9, "the case stops no trial early"

    outcome = run_sweep(
        sweep,
        SweepOptions(spec_path=spec, storage=in_tmp / "runs", live=False, track=False),
    )
    assert outcome.errored == 0
    assert real_trials(outcome.storage_dir) == expected
