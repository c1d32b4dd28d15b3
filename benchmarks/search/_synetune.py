"""Syne Tune's schedulers on a curve problem, on simulated workers (the ``bench`` extra).

Syne Tune 0.16's baselines (``syne_tune.optimizer.baselines``: ASHA, BOHB, ASHA-BORE,
ASHA-CQR, and FIFO random search as the adapter's own check) are driven through the
scheduler interface its ``Tuner`` uses (``suggest``, ``on_trial_add``, ``on_trial_result``
returning CONTINUE / PAUSE / STOP, ``on_trial_complete``, ``on_trial_error``,
``on_trial_remove``), on a simulated clock with the rules of sweeplab's simulator and of
``_optuna_hyperband``:

- each free worker takes the scheduler's next suggestion: a new trial starts at epoch 1, a
  resumed (paused) trial at the epoch after the one it was paused at, with the config the
  suggestion gives if it gives one; a suggested value off its domain is clipped into it (below);
  an epoch takes the seconds the curve says, and reports
  arrive in simulated-time order (ties by the trial started first);
- each report is told to ``on_trial_result`` with the curve's metrics and ``epoch``, the
  resource attribute. STOP ends the trial (``on_trial_remove``, as the ``Tuner`` does), PAUSE
  parks it until a suggestion resumes it, and a trial that reaches ``max_iterations`` with
  CONTINUE has finished (``on_trial_complete`` with its last result); a non-finite metric is
  an error (``on_trial_error``). The worker then takes the next suggestion at once;
- no new trial is started after ``trials`` (the first new trial suggested past them is
  dropped, and the scheduler is asked no more; a paused trial is still resumed until then),
  and none once the scheduler has no suggestion (``suggest`` returned None: the ``Tuner`` then
  waits for the running ones); the run stops at the report that spends the iteration budget.

Each baseline is built with its constructor's defaults but for what the protocol fixes: the
problem's space translated to Syne Tune's domains (:func:`synetune_space`), the metric and its
direction, ``time_attr="epoch"``, ``max_t=max_iterations``, and ``random_seed=seed``.

Syne Tune 0.16's KDE searcher (BOHB's) decodes an integer off its range: it encodes ``v`` as
``(v - a) / (upper - a)`` with a tiny ``a`` but draws its random moves as ``(v - lower) / (upper
- lower)``, so LCBench's ``batch_size`` in [16, 512] comes back as 6. The curve cannot read such
a config (the surrogate has no data there), so the adapter clips a suggested number into its
range, as a training script that validates its arguments would, and the scheduler is told the
clipped config (the trial's config); the run counts such trials (``clipped``). Some of
Syne Tune's searchers draw from NumPy's global generator (ASHA's bracket, BORE's random
candidates, CQR's quantile draws), so a run seeds it too, and puts it back afterwards.
"""

from __future__ import annotations

import contextlib
import datetime
import heapq
import math
from collections.abc import Iterator, Mapping
from typing import Any

from benchmarks.search.curves import CurveProblem
from sweeplab.space import Choice, FloatRange, IntRange

__all__ = [
    "BASELINES",
    "RESOURCE_ATTR",
    "build_baseline",
    "into_domains",
    "simulate_scheduler",
    "synetune_run",
    "synetune_space",
    "warm_up",
]

RESOURCE_ATTR = "epoch"
# The baselines by short name -> their class in syne_tune.optimizer.baselines. "random" is FIFO
# random search: the adapter's check against sweeplab's random + FIFO.
BASELINES = {
    "asha": "ASHA",
    "bohb": "BOHB",
    "asha-bore": "ASHABORE",
    "asha-cqr": "ASHACQR",
    "random": "RandomSearch",
}
_EPOCH_ZERO = datetime.datetime(2000, 1, 1)


def warm_up() -> None:
    """Imports the baselines' searchers (XGBoost, statsmodels, scikit-learn), so that no run's
    time includes them, and quiets what each run would log: Syne Tune's warning that its ASHA
    passes ``points_to_evaluate`` twice (its own baselines do), and statsmodels' notice that its
    KDE draws from NumPy's global generator (seeded here)."""
    import logging
    import warnings

    import syne_tune.optimizer.baselines
    import syne_tune.optimizer.schedulers.searchers.bore
    import syne_tune.optimizer.schedulers.searchers.conformal.conformal_quantile_regression_searcher
    import syne_tune.optimizer.schedulers.searchers.kde  # noqa: F401
    import xgboost  # noqa: F401

    logging.getLogger("syne_tune").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message="After 0.17 or January 2028", category=FutureWarning)


def synetune_space(space: Mapping[str, Any]) -> dict[str, Any]:
    """A flat sweeplab space as a Syne Tune config space; bounds are inclusive in both.

    A float range becomes ``uniform``/``loguniform`` (``quniform``/``qloguniform`` with a
    step), an integer range ``randint``/``lograndint`` (``qrandint``/``qlograndint`` with a
    step), a choice of scalars ``choice``, and any other value a constant.

    Raises:
        ValueError: If a parameter has no Syne Tune domain here (a conditional or nested
            space, a choice of lists or of mixed types).
    """
    from syne_tune import config_space as st

    out: dict[str, Any] = {}
    for name, param in space.items():
        if isinstance(param, FloatRange):
            if param.q is None:
                out[name] = (st.loguniform if param.log else st.uniform)(param.low, param.high)
            else:
                quantized = st.qloguniform if param.log else st.quniform
                out[name] = quantized(param.low, param.high, param.q)
        elif isinstance(param, IntRange):
            if param.q == 1:
                out[name] = (st.lograndint if param.log else st.randint)(param.low, param.high)
            elif param.log:
                out[name] = st.qlograndint(param.low, param.high, param.q)
            else:
                out[name] = st.qrandint(param.low, param.high, param.q)
        elif isinstance(param, Choice):
            kinds = {type(option) for option in param.options}
            if len(kinds) != 1 or not kinds <= {str, int, float, bool}:
                raise ValueError(
                    f"a Syne Tune choice holds scalars of one type, but {name!r} has the "
                    f"options {list(param.options)!r}."
                )
            out[name] = st.choice(list(param.options))
        elif isinstance(param, Mapping) or hasattr(param, "branches"):
            raise ValueError(f"{name!r} is a nested or conditional space: not translated.")
        else:
            out[name] = param
    return out


def build_baseline(name: str, problem: CurveProblem, *, seed: int) -> Any:
    """Syne Tune's baseline `name` (a key of :data:`BASELINES`) for `problem`, seeded.

    Raises:
        ValueError: If `name` is not a baseline.
    """
    from syne_tune.optimizer import baselines

    if name not in BASELINES:
        raise ValueError(f"`name` must be one of {list(BASELINES)}, but got {name!r}.")
    cls = getattr(baselines, BASELINES[name])
    common: dict[str, Any] = {
        "config_space": synetune_space(problem.space),
        "do_minimize": problem.mode == "min",
        "random_seed": seed,
    }
    if name == "random":
        return cls(metrics=[problem.metric], **common)
    return cls(
        metric=problem.metric,
        time_attr=RESOURCE_ATTR,
        max_t=problem.max_iterations,
        **common,
    )


def into_domains(config: Mapping[str, Any], space: Mapping[str, Any]) -> dict[str, Any]:
    """`config` with each number of a Syne Tune ``Integer`` or ``Float`` domain of `space`
    clipped into the domain's closed range, and cast to its type."""
    from syne_tune.config_space import Float, Integer

    out = dict(config)
    for name, domain in space.items():
        if isinstance(domain, Integer | Float) and name in out:
            out[name] = domain.cast(min(max(out[name], domain.lower), domain.upper))
    return out


@contextlib.contextmanager
def _seeded_numpy(seed: int) -> Iterator[None]:
    """NumPy's global generator seeded for the block, and put back after it."""
    import numpy as np

    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """XGBoost (BORE's classifier) on one thread: the benchmark's processes run side by side."""
    import xgboost

    with xgboost.config_context(nthread=1):
        yield


def synetune_run(
    name: str, problem: CurveProblem, *, seed: int, budget: int, workers: int, trials: int
) -> dict[str, Any]:
    """Runs Syne Tune's baseline `name` on `problem` until `budget` iterations are spent.

    Returns:
        What :func:`simulate_scheduler` returns.
    """
    with _seeded_numpy(seed), _one_thread():
        scheduler = build_baseline(name, problem, seed=seed)
        return simulate_scheduler(problem, scheduler, budget=budget, workers=workers, trials=trials)


def simulate_scheduler(
    problem: CurveProblem, scheduler: Any, *, budget: int, workers: int, trials: int
) -> dict[str, Any]:
    """Drives a Syne Tune ``TrialScheduler`` on `problem`'s curves with `workers` simulated
    workers until `budget` iterations are spent (the rules are the module's).

    Returns:
        ``reports``: ``(simulated seconds, score)`` of every report in arrival order (``score``
        is the problem's noise-free score); ``trials``: trials started; ``trial_reports``: each
        trial's count of reports (its epochs trained, resumed ones included); ``clipped``:
        trials whose suggested config was clipped into its domains.
    """
    from syne_tune.backend.trial_status import Trial
    from syne_tune.optimizer.scheduler import SchedulerDecision

    space = synetune_space(problem.space)
    # (finish time, trial id, epoch, metrics): the trial id breaks ties, the first started first.
    running: list[tuple[float, int, int, dict[str, float]]] = []
    reports: list[tuple[float, float]] = []
    trial_reports: list[int] = []
    started: list[Any] = []  # Trial by id
    paused: set[int] = set()
    clipped: set[int] = set()
    now = 0.0
    exhausted = False

    def set_config(trial_id: int, config: Mapping[str, Any]) -> dict[str, Any]:
        inside = into_domains(config, space)
        if inside != config:
            clipped.add(trial_id)
        return inside

    def train(trial_id: int, epoch: int) -> None:
        metrics, seconds = problem.curve(started[trial_id].config, epoch)
        heapq.heappush(running, (now + seconds, trial_id, epoch, metrics))

    def next_task() -> None:
        """The free worker takes the scheduler's next suggestion, if there is one."""
        nonlocal exhausted
        if exhausted:
            return
        suggestion = scheduler.suggest()
        if suggestion is None or (suggestion.spawn_new_trial_id and len(started) >= trials):
            exhausted = True
            return
        if suggestion.spawn_new_trial_id:
            trial = Trial(
                trial_id=len(started),
                config=set_config(len(started), suggestion.config),
                creation_time=_EPOCH_ZERO + datetime.timedelta(seconds=now),
            )
            started.append(trial)
            trial_reports.append(0)
            scheduler.on_trial_add(trial)
            train(trial.trial_id, 1)
            return
        trial_id = suggestion.checkpoint_trial_id
        if trial_id not in paused:
            raise RuntimeError(f"the scheduler resumes trial {trial_id}, which is not paused.")
        paused.remove(trial_id)
        if suggestion.config is not None:
            started[trial_id].config = set_config(trial_id, suggestion.config)
        if trial_reports[trial_id] >= problem.max_iterations:
            raise RuntimeError(f"the scheduler resumes trial {trial_id}, which is at max_t.")
        train(trial_id, trial_reports[trial_id] + 1)

    for _ in range(workers):
        next_task()
    while running and len(reports) < budget:
        now, trial_id, epoch, metrics = heapq.heappop(running)
        reports.append((now, float(metrics[problem.score])))
        trial_reports[trial_id] += 1
        if len(reports) >= budget:
            break
        trial = started[trial_id]
        if not math.isfinite(float(metrics[problem.metric])):
            scheduler.on_trial_error(trial)
            next_task()
            continue
        result = {**metrics, RESOURCE_ATTR: epoch}
        decision = scheduler.on_trial_result(trial, result)
        if decision == SchedulerDecision.STOP:
            scheduler.on_trial_remove(trial)
        elif decision == SchedulerDecision.PAUSE:
            scheduler.on_trial_remove(trial)
            paused.add(trial_id)
        elif epoch >= problem.max_iterations:
            scheduler.on_trial_complete(trial, result)
        else:
            train(trial_id, epoch + 1)
            continue
        next_task()
    return {
        "reports": reports,
        "trials": len(started),
        "trial_reports": trial_reports,
        "clipped": len(clipped),
    }
