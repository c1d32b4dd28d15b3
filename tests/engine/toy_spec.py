"""Writes small spec files for end-to-end tests: a toy Ray Train function with checkpoints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mlflow_store import store_uri

TRAIN_FUNC = """
import json
import os
import tempfile
import time
import uuid

import ray
from ray import train

import sweeplab
from sweeplab import choice, grid, loguniform, quniform, randint, uniform


def train_func(config):
    state = {"epoch": -1, "origin": uuid.uuid4().hex[:8], "w": 0.0}
    checkpoint = train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as folder:
            with open(os.path.join(folder, "state.json")) as f:
                state = json.load(f)
    ctx = train.get_context()
    x = float(config.get("x", 0.5))
    for epoch in range(state["epoch"] + 1, EPOCHS):
        fail_at = config.get("fail_at")
        marker = os.path.join(config.get("marker_dir", "/nonexistent"), "failed-once")
        if fail_at is not None and epoch == fail_at and not os.path.exists(marker):
            open(marker, "w").close()
            if config.get("fail_how") == "sigkill":
                os.kill(os.getpid(), 9)
            raise RuntimeError("injected fault")
        time.sleep(SLEEP)
        state["w"] += float(config.get("lr", 0.1))
        loss = (x - 0.3) ** 2 + 1.0 / (epoch + 1) - 0.01 * state["w"]
        state["epoch"] = epoch
        metrics = {
            "loss": loss,
            "epoch": epoch,
            "origin": state["origin"],
            "w": state["w"],
            "rank": ctx.get_world_rank(),
            "world_size": ctx.get_world_size(),
            "node": ray.get_runtime_context().get_node_id(),
            "worker_pid": os.getpid(),
            "config_json": json.dumps(config, sort_keys=True),
        }
        with tempfile.TemporaryDirectory() as folder:
            ckpt = None
            if ctx.get_world_rank() == 0 and epoch % CHECKPOINT_EVERY == 0:
                with open(os.path.join(folder, "state.json"), "w") as f:
                    json.dump(state, f)
                ckpt = train.Checkpoint.from_directory(folder)
            train.report(metrics, checkpoint=ckpt)
"""


def write_spec(
    folder: Path,
    sweep_source: str,
    *,
    epochs: int = 4,
    sleep: float = 0.05,
    checkpoint_every: int = 1,
    name: str = "toy",
) -> Path:
    """A spec file whose `sweep = sweeplab.Sweep(<sweep_source>)` uses the toy train_func."""
    path = folder / f"{name}.py"
    header = f"EPOCHS = {epochs}\nSLEEP = {sleep}\nCHECKPOINT_EVERY = {checkpoint_every}\n"
    path.write_text(
        header + TRAIN_FUNC + f"\n\nsweep = sweeplab.Sweep(\n    train_func=train_func,\n"
        f"    {sweep_source}\n)\n"
    )
    return path


def run_toy_sweep(tmp_path: Path, sweep_source: str, **spec_kwargs: Any) -> Any:
    """Writes a toy spec in `tmp_path` and runs it in-process (tracked into tmp_path's SQLite)."""
    from sweeplab.engine import SweepOptions, run_sweep
    from sweeplab.spec import load_spec

    spec = write_spec(tmp_path, sweep_source, **spec_kwargs)
    options = SweepOptions(
        spec_path=spec,
        storage=tmp_path / "runs",
        tracking_uri=store_uri(tmp_path),
        live=False,
    )
    return run_sweep(load_spec(spec), options)


def progress_rows(outcome: Any) -> dict[str, list[dict[str, Any]]]:
    """The engine's own result rows of every trial, by trial id: the trial loop's
    ``trials/<id>/result.json``."""
    import json

    rows: dict[str, list[dict[str, Any]]] = {}
    for path in (outcome.storage_dir / "trials").glob("*/result.json"):
        records = [json.loads(line) for line in path.read_text().splitlines() if line]
        if records:
            rows[str(records[0]["trial_id"])] = records
    return rows


def trial_errors(outcome: Any) -> str:
    """The error files of the sweep's errored trials, for an assertion's message."""
    texts = [
        f"{path.parent.name}:\n{path.read_text(errors='replace')[-2000:]}"
        for path in sorted((outcome.storage_dir / "trials").glob("*/error.txt"))
    ]
    return "\n".join(texts) or "(no error.txt in the sweep's trials folder)"


def record_sweep(uri: str, storage: Path, name: str, trials: list[tuple]) -> None:
    """Records a sweep in MLflow as the engine does, without Ray: a `SweepTracker` fed with
    Tune-like trials ``(trial_id, config, reported losses, errored)`` (metric ``loss``, min)."""
    from types import SimpleNamespace

    from sweeplab.tracking import SweepTracker

    tracker = SweepTracker(
        tracking_uri=uri,
        sweep_name=name,
        storage_dir=storage,
        metric="loss",
        mode="min",
        max_iterations=2,
    )
    tracker.start()
    for trial_id, config, losses, errored in trials:
        trial = SimpleNamespace(
            trial_id=trial_id, config=config, local_path=None, path=None, error_file=None
        )
        tracker.trial_started(trial)
        for step, loss in enumerate(losses, start=1):
            tracker.trial_reported(trial, {"loss": loss, "training_iteration": step})
        tracker.trial_failed(trial, None) if errored else tracker.trial_ended(trial)
    tracker.finish()
