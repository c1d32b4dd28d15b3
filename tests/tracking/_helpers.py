"""Trainables and MLflow readers shared by the slow tracking tests (not a test module)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

N_ITER = 8


def make_trainable(ckpt_root: Path, sleep_s: float = 0.02, fail_x: int | None = None) -> Any:
    """A function trainable standing in for the engine's trial driver.

    Built in a function so that cloudpickle ships it by value to Ray's workers.
    """

    def trainable(config: dict) -> None:
        import os
        import time

        from ray import tune

        trial_id = tune.get_context().get_trial_id()
        x = config["x"]
        for i in range(1, N_ITER + 1):
            time.sleep(sleep_s)
            if fail_x is not None and x == fail_x and i == 3:
                raise RuntimeError(f"boom: trial with x={x} failed on purpose")
            loss = (abs(x - 1) + 1) / i + (0.3 if i == N_ITER else 0.0)
            path = os.path.join(ckpt_root, trial_id, f"step_{i:03d}")
            os.makedirs(path, exist_ok=True)
            with open(os.path.join(path, "weights.txt"), "w") as f:
                f.write(f"{trial_id} {i} {loss}\n")
            tune.report(
                {"loss": loss, "acc": 1 - loss / 10, "note": "text", "flag": True,
                 "checkpoint_path": path}
            )  # fmt: skip

    return trainable


def tune_results(trial_dir: str | Path) -> list[dict[str, Any]]:
    """The rows Tune wrote to a trial's result.json."""
    path = Path(trial_dir, "result.json")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def children(client: Any, parent_run_id: str, experiment_id: str) -> list[Any]:
    return client.search_runs(
        [experiment_id], filter_string=f"tags.`mlflow.parentRunId` = '{parent_run_id}'"
    )
