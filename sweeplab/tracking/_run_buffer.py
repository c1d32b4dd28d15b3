"""What waits to be sent for one trial's child run, and MLflow's limits on how it is sent.

The :class:`~sweeplab.tracking._flusher.Flusher` keeps one :class:`RunBuffer` per trial; both
of its paths to the store (MLflow's client and the bulk writer) take from it, and skip the
metric points MLflow already has (:func:`unlogged`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

MAX_METRICS_PER_BATCH = 1000  # mlflow.utils.validation.MAX_METRICS_PER_BATCH
MAX_PARAMS_TAGS_PER_BATCH = 100  # mlflow.utils.validation.MAX_PARAMS_TAGS_PER_BATCH
MAX_PARAM_LENGTH = 6000
MAX_TAG_LENGTH = 8000

# (key, value, timestamp in ms, step)
MetricPoint = tuple[str, float, int, int]


@dataclass
class RunBuffer:
    """What is waiting to be sent for one trial's child run."""

    trial_id: str
    run_id: str | None = None
    create_tags: dict[str, str] = field(default_factory=dict)
    run_name: str | None = None
    start_time: int | None = None
    reopen: bool = False
    params: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    metrics: list[MetricPoint] = field(default_factory=list)
    terminal: str | None = None
    end_time: int | None = None
    # Steps already in MLflow per metric key; ``None`` until read back for a reused run.
    logged: dict[str, set[tuple[int, float]]] | None = None
    create_failed: bool = False
    # When the oldest data not yet sent arrived (``time.monotonic()``); None when none waits.
    since: float | None = None

    def note_waiting(self) -> None:
        """Marks the time the oldest unsent data arrived, if nothing was waiting before."""
        if self.since is None:
            self.since = time.monotonic()

    def pending(self) -> int:
        return (
            len(self.metrics)
            + len(self.params)
            + len(self.tags)
            + (self.run_id is None)
            + self.reopen
            + (self.terminal is not None)
        )


def unlogged(
    points: list[MetricPoint], logged: dict[str, set[tuple[int, float]]]
) -> list[MetricPoint]:
    """The points MLflow does not have yet by (key, step, value), each once; `logged` is left
    as it is (a bulk write records them only once its transaction commits).

    By (step, value), not step: a resumed sweep re-sends points MLflow has, and a PBT
    recipient reports new values at steps its pre-exploit self already used.
    """
    seen: set[tuple[str, int, float]] = set()
    fresh = []
    for point in points:
        key, value, _, step = point
        if (step, value) in logged.get(key, ()) or (key, step, value) in seen:
            continue
        seen.add((key, step, value))
        fresh.append(point)
    return fresh
