"""What watches the trial loop: the engine's tracker and live table, told of each trial event."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sweeplab.loop._trial import LoopTrial

__all__ = ["LoopObserver"]


class LoopObserver:
    """Told of each trial event of a `TrialLoop`, in the order they happen; does nothing here.

    Subclass it and override what you watch. The loop calls it after it has decided: a result
    comes with the ``done`` flag of the decision (a trial stopped there), an ended trial with
    its ``outcome`` set (``"finished"``, ``"stopped"``, ``"diverged"`` or ``"error"``).
    """

    def on_trial_add(self, trial: LoopTrial) -> None:
        """The searcher made `trial`."""

    def on_trial_start(self, trial: LoopTrial) -> None:
        """`trial` started, or resumed after a pause (from its checkpoint)."""

    def on_trial_result(self, trial: LoopTrial, result: dict[str, Any]) -> None:
        """`trial` reported `result` (its metrics with ``training_iteration`` and ``done``)."""

    def on_trial_retry(self, trial: LoopTrial) -> None:
        """`trial`'s training function failed and runs again from its latest checkpoint."""

    def on_trial_end(self, trial: LoopTrial) -> None:
        """`trial` ended for good; its ``outcome`` says how (``error`` included)."""

    def on_trial_exploit(self, trial: LoopTrial, donor: LoopTrial, iteration: int) -> None:
        """PBT gave `trial` the explored config and a copy of the checkpoint of `donor`."""

    def on_step_end(self) -> None:
        """The loop has applied everything one report caused (and made and started the trials
        that followed): its state is whole here, between two reports."""
