"""Where the loop's new trials come from: a search algorithm, as Tune's controller sees it."""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["TrialSource"]


class TrialSource(Protocol):
    """Where new trials come from: a search algorithm, as Tune's controller sees it."""

    def next_trial(self) -> tuple[str, dict[str, Any]] | None:
        """A new trial's id and (backend-shaped) config, or None when none can be made now."""
        ...

    def is_finished(self) -> bool:
        """Whether it will make no more trials."""
        ...

    def set_finished(self) -> None:
        """Makes no more trials (the iteration budget is spent)."""
        ...

    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None: ...

    def on_trial_complete(
        self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False
    ) -> None: ...
