"""The simulated Tune controller: trials on N simulated workers, results in simulated-time order.

It follows what Ray Tune 2.60's ``TuneController`` does with a result
(``tune_controller.py``, ``_process_trial_result`` and ``stop_trial``):

1. The sweep's divergence check comes first (the engine's ``DivergenceStopper``: a NaN or
   infinite metric, the first objective's, stops the trial); otherwise the scheduler decides
   (``on_trial_result``).
2. A result the trial stops at is marked ``done`` and withheld from the searcher's
   ``on_trial_result``; any other result reaches it.
3. A stopped trial is completed: the scheduler's ``on_trial_complete`` and the searcher's
   ``on_trial_complete`` get its last result, flattened.
4. A training function returns after ``max_iterations`` reports; Tune then replays its last
   result marked ``done`` and stops the trial without asking the scheduler.
5. A result the scheduler pauses the trial at (HyperBand's rungs) reaches the searcher; the
   trial frees its worker, and when ``choose_trial_to_run`` picks it again it goes on from its
   next iteration, as a trial resumed from the checkpoint of its last report does. A scheduler
   stops a paused trial through the controller's ``stop_trial``, as Tune's (``stop_trial``):
   the scheduler's ``on_trial_remove`` and the searcher's ``on_trial_complete`` without a
   result.

New trials are made (the searcher asked) whenever the limit allows, and a free worker runs the
trial the scheduler's ``choose_trial_to_run`` picks, or else the first trial made that waits to
start. Tune starts a trial's actor, saves and
restores checkpoints and moves results between processes; here all take no simulated time.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sweeplab._numbers import diverged, is_finite_number
from sweeplab.errors import SpecError, SweeplabError
from sweeplab.pareto import Objective
from sweeplab.raycompat import tune_flattener
from sweeplab.simulation._records import Report, SimulatedTrial, Simulation, find_metric
from sweeplab.simulation._strategy import TrialSource

__all__ = ["Curve", "SimulatedController"]

Curve = Callable[[dict[str, Any], int], tuple[Mapping[str, float], float]]

# Tune's trial statuses and scheduler decisions (plain strings in Tune).
PENDING, RUNNING, PAUSED, TERMINATED = "PENDING", "RUNNING", "PAUSED", "TERMINATED"
CONTINUE, PAUSE, STOP = "CONTINUE", "PAUSE", "STOP"


class _Trial:
    """The part of a Tune ``Trial`` that schedulers and searchers read.

    Tune's schedulers read ``trial_id``, ``status``, ``config``, ``last_result``,
    ``evaluated_params`` and ``is_saving``, and key their state by the trial object itself.
    """

    __slots__ = (
        "config",
        "decoded",
        "evaluated_params",
        "experiment_tag",
        "is_saving",
        "last_result",
        "outcome",
        "reports",
        "status",
        "time_total_s",
        "trial_id",
    )

    def __init__(self, trial_id: str, config: dict[str, Any], decoded: dict[str, Any]) -> None:
        self.trial_id = trial_id
        self.config = config
        self.decoded = decoded
        self.evaluated_params = config
        self.experiment_tag = ""
        self.is_saving = False
        self.status = PENDING
        self.last_result: dict[str, Any] = {}
        self.reports: list[Report] = []
        self.time_total_s = 0.0
        self.outcome = "stopped"

    def __repr__(self) -> str:
        return f"SimulatedTrial({self.trial_id})"

    def is_finished(self) -> bool:
        return self.status == TERMINATED


class SimulatedController:
    """Runs a sweep's trials on `workers` simulated workers against `curve`.

    Schedulers get this object where Tune passes its controller: they read ``get_trials`` and
    ``get_live_trials``.

    Args:
        scheduler: The sweep's Tune scheduler, set up (see `simulated_scheduler`).
        source: Where new trials come from (see `simulated_source`).
        curve: ``curve(config, iteration) -> (metrics, seconds)``.
        decode: Turns a trial's backend-shaped config into the one its training function gets.
        metric, mode: The sweep's (its first objective's).
        objectives: The sweep's objectives, each of which the curve must report; empty: the
            one of `metric` and `mode`.
        max_iterations: Reports after which a trial's training function returns.
        workers: Trials that train at once.
        budget_iterations: Iterations in all after which the sweep stops; None: no budget.
        max_pending: Trials made ahead while fewer than this many wait to start, as Tune's
            ``_max_pending_trials`` (the search's trial limit); None: trials are made only while
            fewer than `workers` are live, which is the same for a scheduler that only stops
            trials (its limit is `workers`).
    """

    def __init__(
        self,
        *,
        scheduler: Any,
        source: TrialSource,
        curve: Curve,
        decode: Callable[[dict[str, Any]], dict[str, Any]],
        metric: str,
        mode: str,
        objectives: Sequence[Objective] = (),
        max_iterations: int,
        workers: int,
        budget_iterations: int | None,
        max_pending: int | None = None,
    ) -> None:
        self._flatten = tune_flattener()
        self.scheduler = scheduler
        self.source = source
        self.curve = curve
        self.decode = decode
        self.metric = metric
        self.mode = mode
        self.objectives = tuple(objectives) or (Objective(metric, mode),)
        self.max_iterations = max_iterations
        self.workers = workers
        self.budget = budget_iterations
        self.max_pending = max_pending
        self.trials: list[_Trial] = []
        self.live: dict[_Trial, None] = {}  # insertion-ordered set
        self.running = 0
        self.reports: list[Report] = []
        self.now = 0.0
        # Next report of each running trial: (arrival time, trial index, trial, metrics, seconds);
        # a trial has one at most, so time and index order them.
        self._events: list[tuple[float, int, _Trial, Mapping[str, Any], float]] = []
        self._index: dict[_Trial, int] = {}
        self._stopped_all = False

    # What Tune's schedulers call on the controller.
    def get_trials(self) -> list[_Trial]:
        return self.trials

    def get_live_trials(self) -> list[_Trial]:
        return list(self.live)

    def run(self) -> Simulation:
        """Simulates the sweep to its end."""
        self._make_and_start_trials()
        while self._events:
            time_s, _, trial, metrics, seconds = heapq.heappop(self._events)
            if trial.status != RUNNING:
                continue  # stopped by the scheduler while it trained
            self.now = time_s
            self._process_report(trial, metrics, seconds)
            if self.budget is not None and len(self.reports) >= self.budget:
                self._stop_all()
            self._make_and_start_trials()
        paused = [t.trial_id for t in self.live if t.status == PAUSED]
        if paused and not self._stopped_all:
            raise SweeplabError(
                f"the scheduler left trials {paused} paused and resumed none while no trial "
                "was running; under Tune the sweep would wait."
            )
        if not self._stopped_all and not self.source.is_finished():
            raise SweeplabError(
                "the searcher made no new trial while no trial was running (it returned no "
                f"config after {len(self.trials)} trials); under Tune the sweep would wait."
            )
        return Simulation(
            trials=[
                SimulatedTrial(
                    trial_id=t.trial_id,
                    config=t.decoded,
                    reports=t.reports,
                    status=t.outcome,
                    stopped_at=len(t.reports),
                )
                for t in self.trials
            ],
            reports=self.reports,
            wall_s=self.reports[-1].time_s if self.reports else 0.0,
            iterations=len(self.reports),
            metric=self.metric,
            mode=self.mode,
            objectives=self.objectives,
        )

    def _make_and_start_trials(self) -> None:
        if self._stopped_all:
            return
        # Tune's step: ask the searcher for trials while its limit allows, then start trials.
        while self._may_make_a_trial() and not self.source.is_finished():
            made = self.source.next_trial()
            if made is None:
                break
            trial_id, config = made
            trial = _Trial(trial_id, config, self.decode(config))
            trial.evaluated_params = self._flatten(config)
            self._index[trial] = len(self.trials)
            self.trials.append(trial)
            self.live[trial] = None
            self.scheduler.on_trial_add(self, trial)
        while self.running < self.workers:
            # Tune's `_maybe_add_actors`: the trial the scheduler chooses (a paused one it
            # resumes), else the first trial waiting to start, in the order they were made.
            chosen: _Trial | None = self.scheduler.choose_trial_to_run(self)
            if chosen is None:
                chosen = next((t for t in self.live if t.status == PENDING), None)
            if chosen is None:
                break
            chosen.status = RUNNING
            self.running += 1
            self._train(chosen)

    def _may_make_a_trial(self) -> bool:
        if self.max_pending is None:
            return len(self.live) < self.workers
        return sum(1 for t in self.live if t.status == PENDING) < self.max_pending

    def _train(self, trial: _Trial) -> None:
        """Schedules the trial's next report."""
        iteration = len(trial.reports) + 1
        metrics, seconds = self._call_curve(trial, iteration)
        heapq.heappush(
            self._events,
            (self.now + seconds, self._index[trial], trial, metrics, seconds),
        )

    def _call_curve(self, trial: _Trial, iteration: int) -> tuple[Mapping[str, Any], float]:
        answer = self.curve(trial.decoded, iteration)
        if (
            not isinstance(answer, tuple)
            or len(answer) != 2
            or not isinstance(answer[0], Mapping)
            or not is_finite_number(answer[1])
            or answer[1] < 0
        ):
            raise SpecError(
                "curve(config, iteration) must return (metrics, seconds): a mapping of metric "
                "names to values and a finite number of seconds >= 0, but for "
                f"iteration {iteration} of config {trial.decoded!r} it returned {answer!r}."
            )
        metrics, seconds = answer
        for objective in self.objectives:
            if not find_metric(metrics, objective.name)[0]:
                raise SpecError(
                    f"curve(config, iteration) must report the sweep's metric {objective.name!r}, "
                    f"but for iteration {iteration} of config {trial.decoded!r} it returned the "
                    f"metrics {sorted(metrics)}."
                )
        return dict(metrics), float(seconds)

    def _process_report(self, trial: _Trial, metrics: Mapping[str, Any], seconds: float) -> None:
        iteration = len(trial.reports) + 1
        trial.time_total_s += seconds
        report = Report(trial.trial_id, iteration, metrics, self.now)
        trial.reports.append(report)
        self.reports.append(report)
        result: dict[str, Any] = {
            **metrics,
            "training_iteration": iteration,
            "time_this_iter_s": seconds,
            "time_total_s": trial.time_total_s,
            "time_since_restore": trial.time_total_s,
            "iterations_since_restore": iteration,
            "trial_id": trial.trial_id,
            "done": False,
        }
        flat = self._flatten(result)
        if diverged(result, self.metric):
            decision = STOP
            trial.outcome = "diverged"
        else:
            decision = self.scheduler.on_trial_result(self, trial, flat)
        if decision == STOP:
            result["done"] = True
        else:
            self.source.on_trial_result(trial.trial_id, flat)
        trial.last_result = result
        if decision == CONTINUE and iteration >= self.max_iterations:
            # The training function returned: Tune replays the last result marked `done`.
            result["done"] = True
            decision = STOP
        if decision == STOP:
            if iteration >= self.max_iterations and trial.outcome != "diverged":
                trial.outcome = "finished"
            self._complete(trial)
        elif decision == CONTINUE:
            self._train(trial)
        elif decision == PAUSE:
            trial.status = PAUSED
            self.running -= 1
        else:
            raise SweeplabError(
                f"the scheduler decided {decision!r} for trial {trial.trial_id} at iteration "
                f"{iteration}; a scheduler continues ({CONTINUE}), pauses ({PAUSE}) or stops "
                f"({STOP}) a trial."
            )

    def stop_trial(self, trial: _Trial) -> None:
        """Tune's ``stop_trial``, which schedulers call for a trial other than the reporting
        one (HyperBand, for a paused trial its bracket's halving drops)."""
        if trial.status == TERMINATED:
            return
        if trial.status == RUNNING:
            self._complete(trial)  # its next report, already queued, is dropped
            return
        trial.status = TERMINATED
        if len(trial.reports) >= self.max_iterations and trial.outcome != "diverged":
            trial.outcome = "finished"  # paused at its last iteration, then stopped
        self.live.pop(trial, None)
        self.scheduler.on_trial_remove(self, trial)
        self.source.on_trial_complete(trial.trial_id)

    def _complete(self, trial: _Trial) -> None:
        """Tune's ``stop_trial`` of a running trial: the scheduler and the searcher learn it."""
        trial.status = TERMINATED
        self.running -= 1
        self.live.pop(trial, None)
        if trial.last_result:
            last = self._flatten(trial.last_result)
            self.scheduler.on_trial_complete(self, trial, last)
            self.source.on_trial_complete(trial.trial_id, result=last)
        else:
            # No result yet: as Tune treats a trial that never ran.
            self.scheduler.on_trial_remove(self, trial)
            self.source.on_trial_complete(trial.trial_id)

    def _stop_all(self) -> None:
        """The iteration budget is spent: no new trial, and every running trial stops."""
        self._stopped_all = True
        self.source.set_finished()
        for trial in list(self.live):
            self.stop_trial(trial)  # a scheduler may have stopped it while another stopped
        self._events.clear()
