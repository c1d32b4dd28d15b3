"""The Tune trial's side of warm slots: claim a free slot, run the trial there, stop it."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from sweeplab.engine.slots._protocol import CONTINUE
from sweeplab.keys import CHECKPOINT_PATH_KEY

__all__ = ["run_in_slot", "stop_current_run"]

# How long a trial driver waits for a free slot before saying so in the log.
_CLAIM_WARN_S = 60.0

# The slot run of this trial actor, stopped when Tune stops the trial.
_CURRENT: list[tuple[Any, int]] = []


def stop_current_run() -> None:
    """Ends this trial actor's slot run at its next report (Tune stopped the trial)."""
    import ray

    while _CURRENT:
        host, seq = _CURRENT.pop()
        with contextlib.suppress(Exception):
            ray.get(host.stop.remote(seq), timeout=10)


def _claim(names: tuple[str, ...], trial_id: str) -> Any:
    import logging

    import ray

    started = time.monotonic()
    warned = False
    while True:
        failures = []
        for name in names:
            try:
                host = ray.get_actor(name)
                refusal = ray.get(host.claim.remote(trial_id))
            except Exception as exc:  # the slot's actor is gone
                refusal = repr(exc)
            if refusal is None:
                return host
            if refusal != "busy":
                failures.append(f"{name}: {refusal}")
        if len(failures) == len(names):
            raise RuntimeError("No trial slot can serve: " + "; ".join(failures))
        if not warned and time.monotonic() - started > _CLAIM_WARN_S:
            logging.getLogger(__name__).warning("Trial %s waits for a free slot.", trial_id)
            warned = True
        time.sleep(0.05)


def run_in_slot(
    *,
    slots: tuple[str, ...],
    trial_id: str,
    config: dict[str, Any],
    folder: Path,
    metric: str,
    mode: str,
    checkpoints_to_keep: int,
    metrics_from: str,
    max_failures: int,
) -> None:
    """Runs one Tune trial on a free warm slot, reporting each step to Tune."""
    import ray
    import ray.tune

    restored = ray.tune.get_checkpoint()
    folder.mkdir(parents=True, exist_ok=True)
    host = _claim(slots, trial_id)
    seq = ray.get(
        host.submit.remote(
            trial_id,
            {
                "config": config,
                "folder": str(folder),
                "checkpoint": restored.path if restored is not None else None,
                "metric": metric,
                "mode": mode,
                "checkpoints_to_keep": checkpoints_to_keep,
                "metrics_from": metrics_from,
                "max_failures": max_failures,
            },
        )
    )
    _CURRENT.append((host, seq))
    decision = None
    try:
        while True:
            event = ray.get(host.next_event.remote(seq, decision))
            decision = None
            if event is None:
                continue
            kind, payload = event
            if kind == "done":
                return
            if kind == "error":
                raise RuntimeError(f"Trial {trial_id} failed in its slot:\n{payload}")
            metrics, checkpoint = payload
            if checkpoint is not None:
                metrics[CHECKPOINT_PATH_KEY] = checkpoint
                ray.tune.report(metrics, checkpoint=ray.tune.Checkpoint(checkpoint))
            else:
                ray.tune.report(metrics)
            decision = CONTINUE
    finally:
        # Tune stopped the trial inside `report` (SystemExit) or the driver failed: the ranks
        # leave at the report they wait in.
        stop_current_run()
