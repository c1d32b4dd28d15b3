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

import itertools
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sweeplab.engine._datawait import METER as DATA_WAIT_METER
from sweeplab.engine._datawait import install as install_data_wait
from sweeplab.engine._datawait import with_data_wait
from sweeplab.engine._topk import TopKCheckpoints
from sweeplab.keys import CHECKPOINT_PATH_KEY, WORKERS_KEY
from sweeplab.raycompat import disable_tune_session_guard, route_train_calls_in_process

__all__ = ["run_in_trial"]


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

    # A Train worker has imported `ray.train.torch`, so a `train_func` may call
    # `ray.train.torch.prepare_model` having imported only `ray.train`.
    import ray.train.torch
    import ray.tune

    # Train's APIs refuse to run where a Tune session is active (ray#49454); this process is
    # this trial's own actor, and its reports are routed to Tune right here.
    disable_tune_session_guard()

    restored = ray.tune.get_checkpoint()
    if restored is not None:
        restored = ray.train.Checkpoint(restored.path, restored.filesystem)
    run_folder.mkdir(parents=True, exist_ok=True)
    checkpoints = TopKCheckpoints(metric=metric, mode=mode, keep=checkpoints_to_keep)
    numbers = itertools.count()

    install_data_wait()
    DATA_WAIT_METER.reset()

    def report(metrics: dict[str, Any], checkpoint: Any) -> Any:
        metrics = with_data_wait(metrics)
        metrics[WORKERS_KEY] = 1
        if checkpoint is None:
            ray.tune.report(metrics)
            return None
        path = run_folder / f"checkpoint_{next(numbers):06d}"
        shutil.copytree(checkpoint.path, path)
        checkpoints.add(path, metrics)
        metrics[CHECKPOINT_PATH_KEY] = str(path)
        ray.tune.report(metrics, checkpoint=ray.tune.Checkpoint(str(path)))
        return ray.train.Checkpoint(str(path))

    route_train_calls_in_process(
        experiment_name=run_folder.name, restored=restored, reporter=report
    )
    train_func(user_config)
