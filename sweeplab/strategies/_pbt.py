"""PBT that records each exploit's donor and keeps its trial actors (imported with Ray, only
when a sweep uses PBT)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ray.tune.schedulers import TrialScheduler
from ray.tune.search import BasicVariantGenerator

from sweeplab.raycompat import (
    pbt_exploit_iteration,
    pbt_next_round,
    pbt_with_exploit_hook,
    replace_trial_restore_checkpoint,
    trial_restore_checkpoint,
)
from sweeplab.strategies._hyperband import ResumeWhenStalled

__all__ = ["LineagePBT", "PopulationVariantGenerator"]


class PopulationVariantGenerator(BasicVariantGenerator):
    """Tune's variant generator (PBT accepts no other), finished only once its trials are.

    Tune keeps a pausing trial's actor for reuse unless the search is finished and no trial
    waits for an actor. A PBT population is created up front, so its search is finished from
    the first round on, and at every round's end, when each trial in turn pauses with none
    yet resumed, Tune stopped their actors and started new processes for the next round
    (about a second each). While any trial of the population lives, more trials will want an
    actor, and this search says so. Its trials are not part of its saved state: a resumed
    sweep's search has Tune's own notion of finished.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._population: list[Any] = []

    def next_trial(self) -> Any:
        trial = super().next_trial()
        if trial is not None:
            self._population.append(trial)
        return trial

    def is_finished(self) -> bool:
        return self.made_all_trials() and all(t.is_finished() for t in self._population)

    def made_all_trials(self) -> bool:
        """Whether the whole population is made (Tune's own notion of finished). The trial
        loop asks this: it runs trials of its own, not the Tune trials made here."""
        return bool(super().is_finished())

    def get_state(self) -> Any:
        state = super().get_state()
        if isinstance(state, dict):
            state.pop("_population", None)
        return state

    def set_state(self, state: Any) -> None:
        super().set_state(state)
        self._population = []


class LineagePBT(ResumeWhenStalled, pbt_with_exploit_hook()):  # type: ignore[misc]
    """PBT that tells `on_exploit(trial_id, donor_id, iteration, new_config)` of each exploit.

    In synchronous mode a trial that ends before a round no longer holds the round up, and
    the trial whose result completes a round trains on into the next one instead of pausing
    with the rest: its actor goes on (Tune's PBT would pause it, and a paused trial's actor is
    stopped unless a resumed trial is waiting for one, which at a round's end none is).

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

    def set_exploit_hook(self, on_exploit: Callable[..., None] | None) -> None:
        """Tells `on_exploit` of the exploits from now on (a resumed sweep's fresh sinks)."""
        self._on_exploit = on_exploit

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> str:
        round_before = pbt_next_round(self)
        decision = str(super().on_trial_result(tune_controller, trial, result))
        if decision == TrialScheduler.PAUSE and pbt_next_round(self) != round_before:
            return str(TrialScheduler.CONTINUE)  # this result completed the round
        return self.told_of_pause(trial, decision)

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
