"""A trial as the loop, the scheduler and the searcher see it."""

from __future__ import annotations

from typing import Any

__all__ = ["CONTINUE", "PAUSE", "PAUSED", "PENDING", "RUNNING", "STOP", "TERMINATED", "LoopTrial"]

# Tune's trial statuses and scheduler decisions (plain strings in Tune): Tune's schedulers
# compare a trial's status with them.
PENDING, RUNNING, PAUSED, TERMINATED = "PENDING", "RUNNING", "PAUSED", "TERMINATED"
CONTINUE, PAUSE, STOP = "CONTINUE", "PAUSE", "STOP"


class LoopTrial:
    """The part of a Tune ``Trial`` that schedulers and searchers read, and the loop's record.

    Tune's schedulers read ``trial_id``, ``status``, ``config``, ``last_result``,
    ``evaluated_params`` and ``is_saving``, and key their state by the trial object itself.

    Attributes:
        trial_id: Its id, as the searcher made it.
        index: Its place in the order the trials were made (0 for the first).
        config: Its config in the searcher's (backend) shape.
        decoded: The config its training function gets.
        reports: The metrics of each of its reports, with the time each arrived.
        outcome: ``"finished"``, ``"stopped"``, ``"diverged"`` or ``"error"`` once it ended.
        failures: How often its training function failed (each retried while the sweep's
            ``max_failures`` allows).
        error: What its training function raised last, or None.
        exploits: PBT's exploits of it: the iteration and the donor's id of each (its config
            is then the donor's, explored, and it goes on from the donor's checkpoint).
    """

    __slots__ = (
        "config",
        "decoded",
        "error",
        "evaluated_params",
        "experiment_tag",
        "exploits",
        "failures",
        "index",
        "is_saving",
        "last_result",
        "outcome",
        "reports",
        "status",
        "time_total_s",
        "trial_id",
    )

    def __init__(
        self, trial_id: str, config: dict[str, Any], decoded: dict[str, Any], *, index: int
    ) -> None:
        self.trial_id = trial_id
        self.index = index
        self.config = config
        self.decoded = decoded
        self.evaluated_params = config
        self.experiment_tag = ""
        self.is_saving = False
        self.status = PENDING
        self.last_result: dict[str, Any] = {}
        self.reports: list[tuple[dict[str, Any], float]] = []
        self.time_total_s = 0.0
        self.outcome = "stopped"
        self.failures = 0
        self.error: str | None = None
        self.exploits: list[tuple[int, str]] = []

    def __repr__(self) -> str:
        return f"LoopTrial({self.trial_id})"

    def __getstate__(self) -> dict[str, Any]:
        """Its attributes; an ended trial's reports are left out (its results are its run's:
        a snapshot of a long sweep stays small). Only its last result is kept."""
        state = {name: getattr(self, name) for name in self.__slots__}
        if self.status == TERMINATED:
            state["reports"] = []
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)

    def is_finished(self) -> bool:
        return self.status == TERMINATED
