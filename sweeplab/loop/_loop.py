"""sweeplab's trial loop: a searcher makes trials, a scheduler decides, a backend trains them.

It follows what Ray Tune 2.60's ``TuneController`` does with a result
(``tune_controller.py``, ``_process_trial_result`` and ``stop_trial``), so that Tune's
``Searcher`` and ``TrialScheduler`` classes (and sweeplab's own) run in it unchanged:

1. The sweep's divergence check comes first (the engine's ``DivergenceStopper``: a NaN or
   infinite metric, the first objective's, stops the trial); otherwise the scheduler decides
   (``on_trial_result``).
2. A result the trial stops at is marked ``done`` and withheld from the searcher's
   ``on_trial_result``; any other result reaches it.
3. A stopped trial is completed: the scheduler's ``on_trial_complete`` and the searcher's
   ``on_trial_complete`` get its last result, flattened.
4. A training function returns after ``max_iterations`` reports; Tune then replays its last
   result marked ``done`` and stops the trial without asking the scheduler.
5. A training function that returns before its last iteration ends the trial as finished, at
   its last result (Tune's ``_process_trial_finished``). One that fails is retried from the
   trial's latest checkpoint while ``max_failures`` allows (-1: always), as Tune retries a
   failed trial; otherwise the trial ends as ``"error"`` and the scheduler's
   ``on_trial_error`` and the searcher's ``on_trial_complete(error=True)`` learn it.
6. A result the scheduler pauses the trial at (HyperBand's rungs) reaches the searcher; the
   trial frees its worker, and when ``choose_trial_to_run`` picks it again it goes on from its
   next iteration, as a trial resumed from the checkpoint of its last report does. A scheduler
   stops a paused trial through the loop's ``stop_trial``, as Tune's (``stop_trial``): the
   scheduler's ``on_trial_remove`` and the searcher's ``on_trial_complete`` without a result.

7. PBT's exploit is a decision of the loop's, not a reach into the backend: the scheduler
   (`sweeplab.loop.LoopPBT`) calls `TrialLoop.exploit` for a trial it pauses; the trial takes
   the new config and, through the backend, a copy of the donor's latest checkpoint, and goes
   on from there when it is resumed.

New trials are made (the searcher asked) whenever the limit allows, and a free worker runs the
trial the scheduler's ``choose_trial_to_run`` picks, or else the first trial made that waits to
start. What trains a trial, and when its reports arrive, is the backend's
(`sweeplab.loop.TrialBackend`): the simulated clock of `sweeplab.simulate`, or Ray.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from sweeplab._numbers import diverged
from sweeplab.errors import SweeplabError
from sweeplab.loop._backend import TrialBackend
from sweeplab.loop._dicts import flatten_result
from sweeplab.loop._observer import LoopObserver
from sweeplab.loop._source import TrialSource
from sweeplab.loop._trial import (
    CONTINUE,
    PAUSE,
    PAUSED,
    PENDING,
    RUNNING,
    STOP,
    TERMINATED,
    LoopTrial,
)
from sweeplab.pareto import Objective

__all__ = ["LoopReport", "TrialLoop"]

# (trial id, iteration, metrics, arrival time in seconds since the sweep started)
LoopReport = tuple[str, int, dict[str, Any], float]


class TrialLoop:
    """Runs a sweep's trials on `workers` workers of `backend`.

    Schedulers get this object where Tune passes its controller: they read ``get_trials`` and
    ``get_live_trials`` and call ``stop_trial``.

    Args:
        scheduler: The sweep's Tune scheduler, set up (told the metric and mode).
        source: Where new trials come from.
        backend: What trains the trials.
        decode: Turns a trial's backend-shaped config into the one its training function gets.
        metric, mode: The sweep's (its first objective's).
        objectives: The sweep's objectives; empty: the one of `metric` and `mode`.
        max_iterations: Reports after which a trial's training function returns.
        workers: Trials that train at once.
        budget_iterations: Iterations in all after which the sweep stops; None: no budget.
        max_pending: Trials made ahead while fewer than this many wait to start, as Tune's
            ``_max_pending_trials`` (the search's trial limit); None: trials are made only while
            fewer than `workers` are live, which is the same for a scheduler that only stops
            trials (its limit is `workers`).
        max_failures: Retries of a trial whose training function failed; -1: no limit.
        release_ended: Whether `get_trials` leaves ended trials out, as the engine's Tune
            controller lets ended trials go under a scheduler that only stops trials: Tune's
            ``choose_trial_to_run`` scans every trial it is given at each start, which made a
            sweep's per-trial cost grow with its length. `trials` keeps them all.
        keep_reports: Whether every report is kept: in `reports`, and in each ended trial's
            own ``reports`` (the simulator's record). False (the engine's sweeps): an ended
            trial keeps only its last result, `reports` stays empty, and `report_count`
            counts them, so the driver's memory does not grow with the reports of a long
            sweep.
    """

    def __init__(
        self,
        *,
        scheduler: Any,
        source: TrialSource,
        backend: TrialBackend,
        decode: Callable[[dict[str, Any]], dict[str, Any]],
        metric: str,
        mode: str,
        objectives: Sequence[Objective] = (),
        max_iterations: int,
        workers: int,
        budget_iterations: int | None,
        max_pending: int | None = None,
        max_failures: int = 0,
        release_ended: bool = False,
        keep_reports: bool = True,
    ) -> None:
        self._flatten = flatten_result
        self.scheduler = scheduler
        self.source = source
        self.backend = backend
        self.decode = decode
        self.metric = metric
        self.mode = mode
        self.objectives = tuple(objectives) or (Objective(metric, mode),)
        self.max_iterations = max_iterations
        self.workers = workers
        self.budget = budget_iterations
        self.max_pending = max_pending
        self.max_failures = max_failures
        self.release_ended = release_ended
        self.trials: list[LoopTrial] = []
        self.live: dict[LoopTrial, None] = {}  # insertion-ordered set
        self.running = 0
        self.reports: list[LoopReport] = []
        self.keep_reports = keep_reports
        self.report_count = 0
        self.stopped_all = False
        self.observer = LoopObserver()  # the engine sets its own
        self.deadline: float | None = None  # a time budget's end (time.monotonic())

    # What Tune's schedulers call on the controller.
    def get_trials(self) -> list[LoopTrial]:
        return list(self.live) if self.release_ended else self.trials

    def get_live_trials(self) -> list[LoopTrial]:
        return list(self.live)

    def stop_trial(self, trial: LoopTrial) -> None:
        """Tune's ``stop_trial``, which schedulers call for a trial other than the reporting
        one (HyperBand, for a paused trial its bracket's halving drops)."""
        if trial.status == TERMINATED:
            return
        if trial.status == RUNNING:
            self._complete(trial)
            return
        self._end(trial)
        if len(trial.reports) >= self.max_iterations and trial.outcome != "diverged":
            trial.outcome = "finished"  # paused at its last iteration, then stopped
        self.scheduler.on_trial_remove(self, trial)
        self.source.on_trial_complete(trial.trial_id)
        self._told_ended(trial)

    def flatten(self, result: dict[str, Any]) -> dict[str, Any]:
        """`result` flattened as Tune flattens what it hands schedulers and searchers."""
        return dict(self._flatten(result))

    def exploit(self, trial: LoopTrial, donor: LoopTrial, config: dict[str, Any]) -> None:
        """PBT's exploit: `trial` (paused, or pausing at the result being decided) takes
        `config` and goes on from a copy of `donor`'s latest checkpoint when it resumes."""
        trial.config = config
        trial.decoded = self.decode(config)
        trial.evaluated_params = self._flatten(config)
        trial.exploits.append((len(trial.reports), donor.trial_id))
        self.backend.copy_checkpoint(donor, trial)
        self.observer.on_trial_exploit(trial, donor, len(trial.reports))

    def run(self) -> None:
        """Runs the sweep to its end: every trial ended, or the budget spent.

        Raises:
            SweeplabError: If the searcher or the scheduler left the sweep waiting for ever
                (no trial running, none made, or paused trials none resumes).
        """
        self._make_and_start_trials()
        self.observer.on_step_end()
        while (report := self.backend.next_report()) is not None:
            if report.trial.status != RUNNING:
                continue  # ended by the scheduler while it trained
            if report.error is not None:
                self._process_error(report.trial, report.error)
            elif report.returned:
                self._process_return(report.trial)
            else:
                metrics = dict(report.metrics)
                self._process_report(report.trial, metrics, report.seconds, report.time_s)
            if self._budget_spent():
                self._stop_all()
            self._make_and_start_trials()
            self.observer.on_step_end()
        paused = [t.trial_id for t in self.live if t.status == PAUSED]
        if paused and not self.stopped_all:
            raise SweeplabError(
                f"the scheduler left trials {paused} paused and resumed none while no trial "
                "was running; under Tune the sweep would wait."
            )
        if not self.stopped_all and not self.source.is_finished():
            raise SweeplabError(
                "the searcher made no new trial while no trial was running (it returned no "
                f"config after {len(self.trials)} trials); under Tune the sweep would wait."
            )

    def _budget_spent(self) -> bool:
        """The iteration budget or the time budget (checked at each report) is spent."""
        if self.budget is not None and self.report_count >= self.budget:
            return True
        return self.deadline is not None and time.monotonic() >= self.deadline

    def close(self) -> None:
        """Frees what the search holds (a grid's variant generator, its scratch folder)."""
        close = getattr(self.source, "close", None)
        if close is not None:
            close()

    def _make_and_start_trials(self) -> None:
        if self.stopped_all:
            return
        # Tune's step: ask the searcher for trials while its limit allows, then start trials.
        while self._may_make_a_trial() and not self.source.is_finished():
            made = self.source.next_trial()
            if made is None:
                break
            trial_id, config = made
            trial = LoopTrial(trial_id, config, self.decode(config), index=len(self.trials))
            trial.evaluated_params = self._flatten(config)
            self.trials.append(trial)
            self.live[trial] = None
            self.scheduler.on_trial_add(self, trial)
            self.observer.on_trial_add(trial)
        while self.running < self.workers:
            # Tune's `_maybe_add_actors`: the trial the scheduler chooses (a paused one it
            # resumes), else the first trial waiting to start, in the order they were made.
            chosen: LoopTrial | None = self.scheduler.choose_trial_to_run(self)
            if chosen is None:
                chosen = next((t for t in self.live if t.status == PENDING), None)
            if chosen is None:
                break
            chosen.status = RUNNING
            self.running += 1
            self.backend.train(chosen, len(chosen.reports) + 1)
            self.observer.on_trial_start(chosen)

    def _may_make_a_trial(self) -> bool:
        if self.max_pending is None:
            return len(self.live) < self.workers
        return sum(1 for t in self.live if t.status == PENDING) < self.max_pending

    def _process_report(
        self, trial: LoopTrial, metrics: dict[str, Any], seconds: float, time_s: float
    ) -> None:
        iteration = len(trial.reports) + 1
        trial.time_total_s += seconds
        trial.reports.append((metrics, time_s))
        self.report_count += 1
        if self.keep_reports:
            self.reports.append((trial.trial_id, iteration, metrics, time_s))
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
        self.observer.on_trial_result(trial, result)
        if decision == STOP:
            if iteration >= self.max_iterations and trial.outcome != "diverged":
                trial.outcome = "finished"
            self._complete(trial)
        elif decision == CONTINUE:
            self.backend.train(trial, iteration + 1)
        elif decision == PAUSE:
            trial.status = PAUSED
            self.running -= 1
            self.backend.end(trial)
        else:
            raise SweeplabError(
                f"the scheduler decided {decision!r} for trial {trial.trial_id} at iteration "
                f"{iteration}; a scheduler continues ({CONTINUE}), pauses ({PAUSE}) or stops "
                f"({STOP}) a trial."
            )

    def _process_return(self, trial: LoopTrial) -> None:
        """The training function returned before its last iteration: the trial finished."""
        if trial.outcome != "diverged":
            trial.outcome = "finished"
        if trial.last_result:
            trial.last_result["done"] = True
        self._complete(trial)

    def _process_error(self, trial: LoopTrial, error: str) -> None:
        """The training function failed: a retry from the latest checkpoint, or the end."""
        trial.failures += 1
        trial.error = error
        if self.max_failures < 0 or trial.failures <= self.max_failures:
            self.observer.on_trial_retry(trial)
            self.backend.train(trial, len(trial.reports) + 1)
            return
        trial.outcome = "error"
        self.running -= 1
        self._end(trial)
        self.scheduler.on_trial_error(self, trial)
        self.source.on_trial_complete(trial.trial_id, error=True)
        self._told_ended(trial)

    def _complete(self, trial: LoopTrial) -> None:
        """Tune's ``stop_trial`` of a running trial: the scheduler and the searcher learn it."""
        self.running -= 1
        self._end(trial)
        if trial.last_result:
            last = self._flatten(trial.last_result)
            self.scheduler.on_trial_complete(self, trial, last)
            self.source.on_trial_complete(trial.trial_id, result=last)
        else:
            # No result yet: as Tune treats a trial that never ran.
            self.scheduler.on_trial_remove(self, trial)
            self.source.on_trial_complete(trial.trial_id)
        self._told_ended(trial)

    def _told_ended(self, trial: LoopTrial) -> None:
        """The observer learns that `trial` ended; then, unless reports are kept, the trial
        keeps only its last result."""
        self.observer.on_trial_end(trial)
        if not self.keep_reports:
            trial.reports = []

    def _end(self, trial: LoopTrial) -> None:
        trial.status = TERMINATED
        self.live.pop(trial, None)
        self.backend.end(trial)

    def _stop_all(self) -> None:
        """The iteration budget is spent: no new trial, and every live trial stops."""
        self.stopped_all = True
        self.source.set_finished()
        for trial in list(self.live):
            self.stop_trial(trial)  # a scheduler may have stopped it while another stopped
