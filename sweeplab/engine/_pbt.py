"""PBT that records each exploit's donor (imported only when a sweep uses PBT)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sweeplab.engine._hyperband import ResumeWhenStalled
from sweeplab.engine._ray_compat import (
    pbt_exploit_iteration,
    pbt_with_exploit_hook,
    replace_trial_restore_checkpoint,
    trial_restore_checkpoint,
)

__all__ = ["LineagePBT"]


class LineagePBT(ResumeWhenStalled, pbt_with_exploit_hook()):  # type: ignore[misc]
    """PBT that tells `on_exploit(trial_id, donor_id, iteration, new_config)` of each exploit.

    In synchronous mode a trial that ends before a round no longer holds the round up.

    The exploited trial restarts from the donor's Tune checkpoint, which the trial driver
    reported as a copy of the donor's Train checkpoint, so weights and epoch carry over.
    """

    def __init__(
        self,
        *,
        exploit_dir: str,
        on_exploit: Callable[..., None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._exploit_dir = exploit_dir
        self._on_exploit = on_exploit

    def after_exploit(self, trial: Any, donor: Any) -> None:
        self._pin_checkpoint(trial)
        if self._on_exploit is not None:
            iteration = pbt_exploit_iteration(self, trial)
            self._on_exploit(trial.trial_id, donor.trial_id, iteration, dict(trial.config))

    def _pin_checkpoint(self, trial: Any) -> None:
        """Restarts `trial` from a copy of the donor's checkpoint, not the donor's own folder.

        The recipient starts again only after a new actor (and trainer group) is up; by then the
        donor has reported more checkpoints and may have deleted the one being exploited.
        """
        checkpoint = trial_restore_checkpoint(trial)
        if checkpoint is None:
            return
        folder = Path(self._exploit_dir, trial.trial_id)
        shutil.rmtree(folder, ignore_errors=True)  # an earlier exploit's copy, already restored
        folder.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(checkpoint.path, folder)
        replace_trial_restore_checkpoint(trial, str(folder))
