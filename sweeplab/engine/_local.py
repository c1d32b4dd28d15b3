"""One-worker trials without a trainer group: the user's Ray Train calls routed to Tune.

A one-worker group costs a Train controller, a placement-group cleaner and a worker process per
trial (about 10 s on a 2-core machine) for no parallelism at all. Train V2 can run a function in
the calling process (`num_workers=0`), but refuses `ray.train.report` inside a Tune trial
(ray#49454). This module installs Train's own local-mode utilities in the trial's process with a
`report` that persists the checkpoint and reports to Tune, so an unchanged `train_func` calling
`ray.train.report`, `ray.train.get_checkpoint`, `ray.train.get_context`, `prepare_model` and
`prepare_data_loader` runs in the Tune trial itself.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sweeplab.engine._datawait import METER as DATA_WAIT_METER
from sweeplab.engine._datawait import install as install_data_wait
from sweeplab.engine._datawait import with_data_wait
from sweeplab.engine._ray_compat import disable_tune_session_guard, route_train_calls_in_process

__all__ = ["run_in_trial"]


class _CheckpointShelf:
    """The trial's checkpoints in its Train folder: top `keep` by the metric, plus the latest."""

    def __init__(self, folder: Path, metric: str, mode: str, keep: int) -> None:
        self.folder = folder
        self.metric = metric
        self.mode = mode
        self.keep = keep
        self.kept: list[tuple[float, Path]] = []
        self.count = 0

    def add(self, source: str, metrics: dict[str, Any]) -> Path:
        destination = self.folder / f"checkpoint_{self.count:06d}"
        self.count += 1
        shutil.copytree(source, destination)
        (destination / ".sweeplab_metrics.json").write_text(json.dumps(metrics, default=str))
        value = metrics.get(self.metric)
        score = float(value) if isinstance(value, (int, float)) else -math.inf
        if math.isnan(score):
            score = -math.inf
        elif self.mode == "min":
            score = -score
        self.kept.append((score, destination))
        ranked = sorted(self.kept, key=lambda item: item[0], reverse=True)
        keep = {path for _, path in ranked[: self.keep]} | {destination}
        for _, path in list(self.kept):
            if path not in keep:
                shutil.rmtree(path, ignore_errors=True)
        self.kept = [(score, path) for score, path in self.kept if path in keep]
        return destination


def run_in_trial(
    train_func: Callable[..., Any],
    user_config: dict[str, Any],
    *,
    run_folder: Path,
    metric: str,
    mode: str,
    checkpoints_to_keep: int,
) -> None:
    """Runs `train_func(user_config)` in this Tune trial, as a one-worker Ray Train group would."""
    import ray.train
    import ray.tune

    # Train's APIs refuse to run where a Tune session is active (ray#49454); this process is
    # this trial's own actor, and its reports are routed to Tune right here.
    disable_tune_session_guard()

    restored = ray.tune.get_checkpoint()
    if restored is not None:
        restored = ray.train.Checkpoint(restored.path, restored.filesystem)
    run_folder.mkdir(parents=True, exist_ok=True)
    shelf = _CheckpointShelf(run_folder, metric, mode, checkpoints_to_keep)

    install_data_wait()
    DATA_WAIT_METER.reset()

    def report(metrics: dict[str, Any], checkpoint: Any) -> Any:
        metrics = with_data_wait(metrics)
        metrics["sweeplab_workers"] = 1
        if checkpoint is None:
            ray.tune.report(metrics)
            return None
        path = shelf.add(checkpoint.path, metrics)
        metrics["checkpoint_path"] = str(path)
        ray.tune.report(metrics, checkpoint=ray.tune.Checkpoint(str(path)))
        return ray.train.Checkpoint(str(path))

    route_train_calls_in_process(
        experiment_name=run_folder.name, restored=restored, reporter=report
    )
    train_func(user_config)
