"""PBT that records each exploit's donor (imported only when a sweep uses PBT)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ray.tune.schedulers import PopulationBasedTraining

__all__ = ["LineagePBT"]


class LineagePBT(PopulationBasedTraining):
    """PBT that tells `on_exploit(trial_id, donor_id, iteration, new_config)` of each exploit.

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

    def _exploit(self, tune_controller: Any, trial: Any, trial_to_clone: Any) -> None:
        super()._exploit(tune_controller, trial, trial_to_clone)
        self._pin_checkpoint(trial)
        if self._on_exploit is not None:
            iteration = int(self._trial_state[trial].last_train_time)
            self._on_exploit(trial.trial_id, trial_to_clone.trial_id, iteration, dict(trial.config))

    def _pin_checkpoint(self, trial: Any) -> None:
        """Restarts `trial` from a copy of the donor's checkpoint, not the donor's own folder.

        The recipient starts again only after a new actor (and trainer group) is up; by then the
        donor has reported more checkpoints and may have deleted the one being exploited.
        """
        from ray.train._internal.session import _TrainingResult
        from ray.tune import Checkpoint

        manager = trial.run_metadata.checkpoint_manager
        latest = manager._latest_checkpoint_result
        if latest is None or latest.checkpoint is None:
            return
        folder = Path(self._exploit_dir, trial.trial_id)
        shutil.rmtree(folder, ignore_errors=True)  # an earlier exploit's copy, already restored
        folder.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(latest.checkpoint.path, folder)
        manager._latest_checkpoint_result = _TrainingResult(
            checkpoint=Checkpoint(str(folder)), metrics=latest.metrics
        )
