"""The loop's handling of a training function that fails or returns early, on a scripted backend.

The backend here trains like the simulated one but fails or returns where its script says: the
loop must retry a failed trial from its next iteration while ``max_failures`` allows, end it as
an error after that (telling the scheduler and the searcher), and finish a trial whose function
returned. No Ray runtime is started.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest

from sweeplab import Sweep, uniform
from sweeplab.loop import BackendReport, LoopTrial, sweep_loop


def train_func(config: dict[str, Any]) -> None:
    pass


class ScriptedBackend:
    """Each trial reports ``{"loss": 1 / iteration}``, except where `script` says
    ``(trial index, iteration) -> "error" | "return"``; a scripted error happens once."""

    def __init__(self, script: dict[tuple[int, int], str]) -> None:
        self.script = dict(script)
        self.queue: deque[BackendReport] = deque()
        self.trained: list[tuple[int, int]] = []
        self.now = 0.0

    def train(self, trial: LoopTrial, iteration: int) -> None:
        self.trained.append((trial.index, iteration))
        self.now += 1.0
        what = self.script.pop((trial.index, iteration), None)
        if what == "error":
            self.queue.append(BackendReport.ended(trial, self.now, error="RuntimeError: boom"))
        elif what == "return":
            self.queue.append(BackendReport.ended(trial, self.now))
        else:
            self.queue.append(BackendReport(trial, {"loss": 1 / iteration}, 1.0, self.now))

    def next_report(self) -> BackendReport | None:
        return self.queue.popleft() if self.queue else None

    def end(self, trial: LoopTrial) -> None:
        self.queue = deque(r for r in self.queue if r.trial is not trial)


def run(script: dict[tuple[int, int], str], **fields: Any) -> tuple[Any, ScriptedBackend]:
    sweep = Sweep(
        name="scripted",
        train_func=train_func,
        space={"x": uniform(0, 1)},
        metric="loss",
        mode="min",
        searcher="random",
        scheduler="fifo",
        num_trials=2,
        max_iterations=4,
        seed=0,
        **fields,
    )
    backend = ScriptedBackend(script)
    loop = sweep_loop(sweep, backend, workers=1)
    try:
        loop.run()
    finally:
        loop.close()
    return loop, backend


def test_a_failure_is_retried_at_the_iteration_it_failed() -> None:
    loop, backend = run({(0, 3): "error"}, max_failures=1)

    first, second = loop.trials
    assert (first.outcome, first.failures, len(first.reports)) == ("finished", 1, 4)
    assert first.error == "RuntimeError: boom"
    assert backend.trained[:5] == [(0, 1), (0, 2), (0, 3), (0, 3), (0, 4)]
    assert (second.outcome, len(second.reports)) == ("finished", 4)


@pytest.mark.parametrize("max_failures", [0, 1])
def test_a_trial_out_of_retries_ends_as_an_error(max_failures: int) -> None:
    script = {(0, 2): "error"}
    if max_failures:
        script[(0, 1)] = "error"  # one more failure, at iteration 1 (retried there)
    loop, _ = run(script, max_failures=max_failures)

    first, second = loop.trials
    assert (first.outcome, first.failures) == ("error", max_failures + 1)
    assert first.status == "TERMINATED"
    # The searcher heard of the error and made the next trial; it ran to its end.
    assert (second.outcome, len(second.reports)) == ("finished", 4)


def test_an_unlimited_retry_budget_retries_every_failure() -> None:
    loop, _ = run({(0, 2): "error", (1, 1): "error"}, max_failures=-1)

    assert [(t.outcome, t.failures) for t in loop.trials] == [("finished", 1), ("finished", 1)]


def test_a_function_that_returns_early_finishes_its_trial_at_its_last_result() -> None:
    loop, _ = run({(0, 3): "return"})

    first, second = loop.trials
    assert (first.outcome, len(first.reports), first.last_result["done"]) == ("finished", 2, True)
    assert first.last_result["training_iteration"] == 2
    assert (second.outcome, len(second.reports)) == ("finished", 4)
