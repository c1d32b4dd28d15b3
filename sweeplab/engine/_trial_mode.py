"""How a sweep's trials run: decided once per sweep, in `ResolvedSweep`, and read everywhere."""

from __future__ import annotations

import enum

__all__ = ["TrialMode"]


class TrialMode(enum.Enum):
    """Where one trial's training function runs.

    Attributes:
        IN_PROCESS: A one-worker trial runs in the process of one of the sweep's slot hosts:
            no group to start. The host runs one trial after another, and a paused or exploited
            trial's next run, in milliseconds.
        WARM_SLOT: A multi-worker trial runs on one of the sweep's warm trial slots: long-lived
            trainer groups, each running one trial after another.
        GROUP_PER_TRIAL: Each trial starts its own trainer group: with ``reuse_groups=False``,
            or an elastic group, which resizes itself and so cannot be a fixed slot.
    """

    IN_PROCESS = "in-process"
    WARM_SLOT = "warm-slot"
    GROUP_PER_TRIAL = "group-per-trial"

    @classmethod
    def decide(cls, *, workers_per_trial: int | tuple[int, int], reuse_groups: bool) -> TrialMode:
        """The one decision of a sweep's trial mode, from its trainer-group fields."""
        if workers_per_trial == 1:
            return cls.IN_PROCESS
        if reuse_groups and isinstance(workers_per_trial, int):
            return cls.WARM_SLOT
        return cls.GROUP_PER_TRIAL

    def describe(self, *, workers_per_trial: int | tuple[int, int], concurrency: int) -> str:
        """One line for `sweeplab preview` and `sweeplab status`: how trials get their group."""
        if self is TrialMode.WARM_SLOT:
            how = (
                f"{concurrency} warm trial slot(s): long-lived groups of {workers_per_trial} "
                "worker(s), each running one trial after another"
            )
        elif self is TrialMode.IN_PROCESS:
            how = "each trial in a reused process (one worker, no group to start)"
        elif not isinstance(workers_per_trial, int):
            how = "a new trainer group per trial (an elastic group cannot be a slot)"
        else:
            how = "a new trainer group per trial (reuse_groups=False)"
        return f"{self.value}: {how}"
