"""Optuna's own TPE and ``HyperbandPruner`` on a curve problem, on simulated workers.

This strategy does not go through ``sweeplab.simulate``: it is Optuna as its own documentation
runs it (``study.ask``, ``trial.report``, ``trial.should_prune``, ``study.tell``), one in-memory
study shared by the workers, in a loop that simulates the workers and the clock the way
sweeplab's simulator does:

- each free worker asks the study for a trial, and trains it one iteration at a time; an
  iteration takes the seconds the curve says, and reports arrive in simulated-time order (ties
  by the trial that was asked first);
- at each report the trial reports the metric at that step and asks the pruner; a pruned trial
  is told ``PRUNED``, a trial that reaches ``max_iterations`` is told its last value, and the
  worker asks for the next trial at once;
- the run stops at the report that spends the iteration budget.

The sampler is ``TPESampler(seed=seed)`` with Optuna's defaults (10 random start-up trials,
independent TPE, no constant liar); the pruner is ``HyperbandPruner(min_resource=1,
max_resource=max_iterations, reduction_factor=3)``, so its brackets are ASHA's with grace 1.
"""

from __future__ import annotations

import heapq
import math
from typing import Any

from benchmarks.search.curves import CurveProblem

__all__ = ["optuna_hyperband_run"]

REDUCTION_FACTOR = 3


def optuna_hyperband_run(
    problem: CurveProblem, *, seed: int, budget: int, workers: int
) -> dict[str, Any]:
    """Runs Optuna's TPE + ``HyperbandPruner`` on `problem` until `budget` iterations are spent.

    Returns:
        ``reports``: ``(simulated seconds, score)`` of every report in arrival order (``score``
        is the problem's noise-free score); ``trials``: trials asked; ``trial_reports``: each
        trial's count of reports.
    """
    import optuna

    from sweeplab.space import Space, compile_to_optuna, decode_config

    space = Space(problem.space)
    define = compile_to_optuna(space)
    study = optuna.create_study(
        # The pruner puts each trial in a bracket by a hash of the study's name and the trial's
        # number: an unnamed study gets a random name, and the run would not be seeded.
        study_name=f"{problem.name}-seed{seed}",
        direction="minimize" if problem.mode == "min" else "maximize",
        sampler=optuna.samplers.TPESampler(seed=seed),
        pruner=optuna.pruners.HyperbandPruner(
            min_resource=1,
            max_resource=problem.max_iterations,
            reduction_factor=REDUCTION_FACTOR,
        ),
    )
    running: list[tuple[float, int, Any, dict[str, Any], int, dict[str, float]]] = []
    reports: list[tuple[float, float]] = []
    trial_reports: list[int] = []
    now = 0.0

    def start(iteration: int, index: int, trial: Any, config: dict[str, Any]) -> None:
        metrics, seconds = problem.curve(config, iteration)
        heapq.heappush(running, (now + seconds, index, trial, config, iteration, metrics))

    def ask() -> None:
        trial = study.ask()
        define(trial)
        config = decode_config(space, trial.params)
        trial_reports.append(0)
        start(1, len(trial_reports) - 1, trial, config)

    for _ in range(workers):
        ask()
    while running and len(reports) < budget:
        now, index, trial, config, iteration, metrics = heapq.heappop(running)
        value = float(metrics[problem.metric])
        reports.append((now, float(metrics[problem.score])))
        trial_reports[index] += 1
        if len(reports) >= budget:
            break
        if not math.isfinite(value):
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            ask()
            continue
        trial.report(value, iteration)
        if iteration >= problem.max_iterations:
            study.tell(trial, value)
            ask()
        elif trial.should_prune():
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            ask()
        else:
            start(iteration + 1, index, trial, config)
    return {"reports": reports, "trials": len(trial_reports), "trial_reports": trial_reports}
