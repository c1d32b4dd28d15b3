"""Synchronous Population Based Training as a decision of sweeplab's trial loop (``"pbt"``).

Ray Tune's ``PopulationBasedTraining`` exploits by reaching into Tune's controller and trial
(``_schedule_trial_save``, ``pause_trial``, the trial's checkpoint manager), so it runs only
under Tune. `LoopPBT` makes the same synchronous rounds through the loop's public surface: it
pauses trials as any scheduler does and asks the loop to exploit (`TrialLoop.exploit`), which
hands the recipient the donor's latest checkpoint through the backend.

A round, as in Tune's synchronous mode: every ``interval`` iterations a trial pauses until
each live trial has reached the round's iteration; the last to arrive runs the round. The
trials are ranked by their score at the round; each of the bottom quantile takes a donor drawn
from the top quantile, the donor's config explored (each mutated value redrawn with
``resample_probability``, else perturbed: a range times 0.8 or 1.2, a choice shifted to a
neighbour) and the donor's checkpoint. The trial that completed the round trains on (Tune's
would pause it with the rest) unless it was exploited itself; the paused ones resume
in the order of their iterations. Differences from Tune's, each a choice:

- Draws come from one ``random.Random(seed)``, so a seeded sweep exploits the same way each
  run (Tune draws from the process's global ``random``).
- No round at a trial's last iteration (``max_iterations``): nothing would train on it.
- A trial that ends before a round (its training function returned, or it failed or diverged)
  leaves it; the round runs when the rest have arrived, instead of waiting for ever.
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Callable, Mapping
from typing import Any

from sweeplab.strategies._traits import SchedulerTraits

# The trial loop's decisions and trial states (`sweeplab.loop`), which are Tune's.
CONTINUE, PAUSE = "CONTINUE", "PAUSE"
PENDING, PAUSED, TERMINATED = "PENDING", "PAUSED", "TERMINATED"
# A trial of the loop (`sweeplab.loop.LoopTrial`): the loop sits above the strategies.
LoopTrial = Any

__all__ = ["LoopPBT"]

PERTURBATION_FACTORS = (1.2, 0.8)


class _State:
    """What PBT knows of one trial: its score and iteration at its last round."""

    __slots__ = ("last_perturbation_time", "last_train_time", "score")

    def __init__(self) -> None:
        self.score: float | None = None
        self.last_train_time = 0
        self.last_perturbation_time = 0


class LoopPBT:
    """Synchronous PBT on sweeplab's trial loop (a loop scheduler; see the module's docstring).

    Args:
        interval: Iterations between two rounds.
        max_iterations: A trial's last iteration; no round is held there.
        mutations: What each exploit may mutate (`sweeplab.space.pbt_mutations`): per key a
            list of options, a range's resampler, or a nested mapping of those.
        explore: Moves an explored config back into the space
            (`sweeplab.space.pbt_explore_fn`), called as ``explore(config, rng)``.
        quantile_fraction: The share of ranked trials in the bottom (and top) quantile.
        resample_probability: The chance that a mutated value is drawn afresh.
        seed: Seeds every draw of the rounds; None: an unseeded generator.
    """

    # It pauses trials for its rounds and exploits through the loop (`scheduler_traits`).
    sweeplab_traits = SchedulerTraits(pauses=True, exploits=True)

    def __init__(
        self,
        *,
        interval: int,
        max_iterations: int,
        mutations: Mapping[str, Any],
        explore: Callable[..., dict[str, Any]] | None,
        quantile_fraction: float,
        resample_probability: float,
        seed: int | None,
    ) -> None:
        self.interval = interval
        self.max_iterations = max_iterations
        self.mutations = dict(mutations)
        self.explore = explore
        self.quantile_fraction = quantile_fraction
        self.resample_probability = resample_probability
        self.rng = random.Random(seed)
        self.metric: str | None = None
        self.sign = 1.0
        self.next_round = interval
        self.rounds = 0
        self.exploits = 0
        self._states: dict[LoopTrial, _State] = {}

    # -- what the loop calls ---------------------------------------------------------------

    def set_search_properties(self, metric: str | None, mode: str | None, **_: Any) -> bool:
        self.metric = metric
        self.sign = -1.0 if mode == "min" else 1.0
        return True

    def on_trial_add(self, loop: Any, trial: LoopTrial) -> None:
        self._states[trial] = _State()

    def on_trial_result(self, loop: Any, trial: LoopTrial, result: dict[str, Any]) -> str:
        time = int(result["training_iteration"])
        state = self._states[trial]
        if time >= self.max_iterations or time - state.last_perturbation_time < self.interval:
            return CONTINUE
        value = result.get(str(self.metric))
        state.score = self.sign * float(value) if value is not None else math.nan
        state.last_train_time = time
        if time < self.next_round:
            return CONTINUE  # behind the round (a late start): no reason to wait
        if not self._round_complete(loop, besides=trial):
            return PAUSE  # waits for the rest of the population
        exploited = self._run_round(loop, time)
        return PAUSE if trial in exploited else CONTINUE

    def on_trial_complete(self, loop: Any, trial: LoopTrial, result: dict[str, Any]) -> None:
        self._leave(loop, trial)

    def on_trial_remove(self, loop: Any, trial: LoopTrial) -> None:
        self._leave(loop, trial)

    def on_trial_error(self, loop: Any, trial: LoopTrial) -> None:
        self._leave(loop, trial)

    def choose_trial_to_run(self, loop: Any) -> LoopTrial | None:
        """The waiting trial furthest behind that has not reached the next round."""
        candidates = [
            t
            for t in loop.get_trials()
            if t.status in (PENDING, PAUSED) and self._states[t].last_train_time < self.next_round
        ]
        return min(candidates, key=lambda t: self._states[t].last_train_time, default=None)

    # -- rounds ----------------------------------------------------------------------------

    def _round_complete(self, loop: Any, *, besides: LoopTrial | None) -> bool:
        return all(
            self._states[t].last_train_time >= self.next_round
            for t in loop.get_live_trials()
            if t is not besides
        )

    def _leave(self, loop: Any, trial: LoopTrial) -> None:
        """`trial` ended: a round that waited only for it runs now."""
        self._states.pop(trial, None)
        if loop.stopped_all:
            return  # the sweep is stopping: no round
        live = loop.get_live_trials()
        if (
            live
            and all(t.status == PAUSED for t in live)
            and self._round_complete(loop, besides=None)
        ):
            self._run_round(loop, self.next_round)

    def _run_round(self, loop: Any, time: int) -> set[LoopTrial]:
        """Ranks the live trials, has the bottom quantile exploit the top; returns the
        exploited trials."""
        self.rounds += 1
        bottom, top = self._quantiles()
        exploited: set[LoopTrial] = set()
        for trial, state in self._states.items():
            if trial.status != TERMINATED:
                state.last_perturbation_time = time
        for trial in bottom:
            donor = self.rng.choice(top)
            config = self._explored(donor.config)
            loop.exploit(trial, donor, config)
            self.exploits += 1
            exploited.add(trial)
            self._states[trial].last_train_time = self._states[donor].last_train_time
        times = [s.last_train_time for t, s in self._states.items() if t.status != TERMINATED]
        self.next_round = max(self.next_round + self.interval, max(times, default=0))
        return exploited

    def _quantiles(self) -> tuple[list[LoopTrial], list[LoopTrial]]:
        ranked = sorted(
            (
                t
                for t, s in self._states.items()
                if t.status != TERMINATED and s.score is not None and not math.isnan(s.score)
            ),
            key=lambda t: (self._states[t].score, t.index),
        )
        if len(ranked) <= 1:
            return [], []
        size = min(math.ceil(len(ranked) * self.quantile_fraction), len(ranked) // 2)
        return ranked[:size], ranked[len(ranked) - size :]

    def _explored(self, config: dict[str, Any]) -> dict[str, Any]:
        explored = _explore(
            config, self.mutations, self.rng, resample_probability=self.resample_probability
        )
        return self.explore(explored, self.rng) if self.explore is not None else explored


def _explore(
    config: Mapping[str, Any],
    mutations: Mapping[str, Any],
    rng: random.Random,
    *,
    resample_probability: float,
) -> dict[str, Any]:
    """`config` with each mutated value redrawn or perturbed, as Tune's PBT explores."""
    out = copy.deepcopy(dict(config))
    for key, mutation in mutations.items():
        if isinstance(mutation, Mapping):
            out[key] = _explore(
                config[key], mutation, rng, resample_probability=resample_probability
            )
        elif isinstance(mutation, (list, tuple)):
            value = config.get(key)
            if rng.random() < resample_probability or value not in mutation:
                out[key] = rng.choice(list(mutation))
            else:
                index = list(mutation).index(value) + rng.choice((-1, 1))
                out[key] = mutation[min(max(index, 0), len(mutation) - 1)]
        elif callable(mutation):
            value = config[key]
            if rng.random() < resample_probability:
                drawn = mutation(rng)
            else:
                drawn = value * rng.choice(PERTURBATION_FACTORS)
            if isinstance(value, bool):
                drawn = bool(drawn)
            elif isinstance(value, int):
                drawn = round(float(drawn))
            out[key] = drawn
        else:
            raise TypeError(f"PBT cannot mutate {key!r} by {mutation!r}")
    return out
