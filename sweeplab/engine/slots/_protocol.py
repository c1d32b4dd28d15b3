"""What a slot's host, its workers and a trial's Tune driver pass to each other."""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["CONTINUE", "LEAVE", "Assignment"]

# Tune's decision on a reported step, as the host hands it to every rank waiting in `report`.
CONTINUE = "continue"
LEAVE = "leave"


@dataclasses.dataclass(frozen=True)
class Assignment:
    """One trial's run on a slot: what every rank needs to start `train_func`."""

    seq: int
    trial_id: str
    config: dict[str, Any]
    folder: str
    checkpoint: str | None
    metric: str
    mode: str
    checkpoints_to_keep: int
    metrics_from: str
    max_failures: int
    # Bumped when Train restarts the group: the restarted ranks count their reports from 0.
    generation: int = 0
