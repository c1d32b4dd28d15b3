"""PBT's population: Tune's variant generator, which the trial loop asks for the population's
configs (imported with Ray, only when a sweep uses PBT)."""

from __future__ import annotations

from typing import Any

from ray.tune.search import BasicVariantGenerator

__all__ = ["PopulationVariantGenerator"]


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
