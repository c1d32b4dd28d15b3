"""What Optuna and HyperOpt learn from a trial that finished, was stopped, diverged or errored.

Real searchers, real Optuna studies and HyperOpt trials, no Ray started: the calls are the ones
Tune 2.60 makes (``on_trial_result`` for each result it lets through, then ``on_trial_complete``
with the last result, flattened and marked ``done``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from sweeplab import Sweep, choice, loguniform, uniform
from sweeplab.engine._search import build_search
from sweeplab.engine._warm import WarmConfig, WarmStartPlan
from sweeplab.raycompat import hyperopt_trials, optuna_study
from sweeplab.strategies import (
    OutcomeLog,
    TrialFeedbackSearcher,
    TrialOutcome,
    hyperopt_loss,
)

MAX = 4
SPACE = {"lr": loguniform(1e-4, 1e-1), "opt": choice({"sgd": {"m": uniform(0, 0.9)}, "adam": {}})}
WARM = [{"lr": 0.01, "opt": {"name": "adam"}}, {"lr": 0.001, "opt": {"name": "sgd", "m": 0.5}}]
WARM3 = [*WARM, {"lr": 0.002, "opt": {"name": "adam"}}]


def train_func(config: dict[str, Any]) -> None:
    pass


def searcher(name: str, *, mode: str = "min", warm: list[dict[str, Any]] | None = None) -> Any:
    sweep = Sweep(
        name="feedback", train_func=train_func, space=SPACE, metric="loss", mode=mode,
        searcher=name, seed=0, num_trials=30, max_iterations=MAX, warm_start=warm,
    )  # fmt: skip
    plan = None
    if warm:
        plan = WarmStartPlan(
            source="test", configs=tuple(WarmConfig(config=c, origin="test") for c in warm)
        )
    search = build_search(sweep, plan)
    search.search_alg.set_search_properties("loss", mode, search.param_space)
    return search.search_alg


def result(iteration: int, loss: float, *, done: bool = False) -> dict[str, Any]:
    return {"loss": loss, "training_iteration": iteration, "done": done}


def finish(alg: Any, trial_id: str, losses: list[float]) -> None:
    """The training function returned after `losses`: Tune replays its last result, done."""
    for step, loss in enumerate(losses, start=1):
        alg.on_trial_result(trial_id, result(step, loss))
    alg.on_trial_complete(trial_id, result=result(len(losses), losses[-1], done=True))


def stop(alg: Any, trial_id: str, losses: list[float]) -> None:
    """A scheduler (or a stopper) stopped the trial at its last result, which it withheld."""
    for step, loss in enumerate(losses[:-1], start=1):
        alg.on_trial_result(trial_id, result(step, loss))
    alg.on_trial_complete(trial_id, result=result(len(losses), losses[-1], done=True))


def feed(alg: Any, prefix: str = "t") -> None:
    """One trial of each kind, in the order of `EXPECTED`."""
    for index in range(6):
        alg.suggest(f"{prefix}{index}")
    finish(alg, f"{prefix}0", [0.9, 0.7, 0.5, 0.4])  # ran its full budget
    stop(alg, f"{prefix}1", [0.8, 0.6])  # stopped at its second report (ASHA's rung)
    stop(alg, f"{prefix}2", [0.7, math.nan])  # diverged: the divergence stopper's cut
    stop(alg, f"{prefix}3", [0.9, 0.8, 0.7, 0.6])  # "stopped" at max_iterations: finished
    alg.on_trial_result(f"{prefix}4", result(1, 0.95))
    alg.on_trial_complete(f"{prefix}4", error=True)
    finish(alg, f"{prefix}5", [0.9, 0.85])  # the training function returned early by itself


EXPECTED = ["COMPLETE", "PRUNED", "FAIL", "COMPLETE", "FAIL", "COMPLETE"]


def optuna_states(alg: Any) -> list[tuple[str, float | None, dict[int, float]]]:
    return [(t.state.name, t.value, t.intermediate_values) for t in optuna_study(alg).trials]


def test_optuna_learns_stopped_as_pruned_with_its_steps_and_finished_as_complete() -> None:
    alg = searcher("optuna")
    assert isinstance(alg, TrialFeedbackSearcher)
    feed(alg)
    states = optuna_states(alg.inner)
    assert [s for s, _, _ in states] == EXPECTED
    assert states[0][1:] == (0.4, {1: 0.9, 2: 0.7, 3: 0.5, 4: 0.4})
    # Pruned with the value of each reported step, the stopping one included.
    assert states[1][1:] == (0.6, {1: 0.8, 2: 0.6})
    assert states[2][1] is None  # a diverged trial is never a value
    assert states[3][1] == 0.6 and states[5][1] == 0.85


def test_ray_alone_would_tell_the_stopped_trial_complete() -> None:
    """The fault the wrapper fixes: without it the stopped trial is COMPLETE at 0.6."""
    alg = searcher("optuna").inner
    feed(alg)
    assert optuna_states(alg)[1][0] == "COMPLETE"


def test_optuna_prunes_a_trial_removed_while_paused_and_ended_by_the_time_budget() -> None:
    alg = searcher("optuna")
    alg.suggest("p")
    alg.on_trial_result("p", result(1, 0.5))
    alg.on_trial_complete("p")  # HyperBand removed it while paused: no result
    alg.suggest("b")
    alg.on_trial_result("b", result(1, 0.5))
    alg.on_trial_result("b", result(2, 0.4))
    alg.on_trial_complete("b", result=result(2, 0.4))  # time budget: seen, not done
    assert [(s, v) for s, v, _ in optuna_states(alg.inner)] == [("PRUNED", 0.5), ("PRUNED", 0.4)]


@pytest.mark.parametrize("mode", ["min", "max"])
def test_hyperopt_orders_finished_before_stopped_and_leaves_out_diverged(mode: str) -> None:
    alg = searcher("hyperopt", mode=mode)
    sign = 1.0 if mode == "min" else -1.0
    for index in range(6):
        alg.suggest(f"t{index}")
    finish(alg, "t0", [sign * 0.5] * MAX)
    finish(alg, "t1", [sign * 0.9] * MAX)
    stop(alg, "t2", [sign * 0.1, sign * 0.2, sign * 0.3])  # got furthest of the stopped
    stop(alg, "t3", [sign * 0.05])  # best value, but stopped at once
    stop(alg, "t4", [sign * 0.2, math.inf])
    alg.on_trial_complete("t5", error=True)
    trials = hyperopt_trials(alg.inner)
    trials.refresh()
    losses = {doc["tid"]: doc["result"].get("loss") for doc in trials.trials}
    assert len(losses) == 4  # the diverged and the errored trial are errored jobs, left out
    assert all(doc["result"]["status"] == "ok" for doc in trials.trials)
    order = sorted(losses, key=lambda tid: losses[tid])
    assert order == sorted(losses)[:4]  # t0 < t1 < t2 < t3: tids are given in suggestion order
    assert all(0 < losses[tid] < 1 for tid in order[:2])  # finished trials: tier 0


@pytest.mark.parametrize(
    ("better", "worse"),
    [
        (TrialOutcome("finished", {4: 9.0}), TrialOutcome("stopped", {3: -9.0})),
        (TrialOutcome("finished", {4: 1e-9}), TrialOutcome("finished", {4: 2e-9})),
        (TrialOutcome("finished", {4: -1e6}), TrialOutcome("finished", {4: 1e6})),
        (TrialOutcome("stopped", {3: 5.0}), TrialOutcome("stopped", {2: -5.0})),
        (TrialOutcome("stopped", {1: 0.1}), TrialOutcome("stopped", {1: 0.2})),
    ],
)
def test_hyperopt_loss_keeps_optunas_order(better: TrialOutcome, worse: TrialOutcome) -> None:
    assert hyperopt_loss(better, mode="min", max_iterations=MAX) < hyperopt_loss(  # type: ignore[operator]
        worse, mode="min", max_iterations=MAX
    )


@pytest.mark.parametrize(
    ("kind", "values"),
    [("diverged", {1: 0.5}), ("errored", {1: 0.5}), ("stopped", {}), ("finished", {})],
)
def test_hyperopt_gets_no_loss_without_a_value(kind: str, values: dict[int, float]) -> None:
    assert hyperopt_loss(TrialOutcome(kind, values), mode="min", max_iterations=MAX) is None


@pytest.mark.parametrize(
    ("seen", "last", "error", "kind"),
    [
        ([1, 2, 3, 4], result(4, 0.1, done=True), False, "finished"),
        ([1, 2, 3], result(4, 0.1, done=True), False, "finished"),  # stopped at max_iterations
        ([1, 2], result(2, 0.1, done=True), False, "finished"),  # returned by itself
        ([1], result(2, 0.1, done=True), False, "stopped"),  # the scheduler's cut
        ([1, 2], result(2, 0.1), False, "stopped"),  # the sweep's end cut it
        ([1], None, False, "stopped"),  # removed while paused or pending
        ([1], result(2, math.nan, done=True), False, "diverged"),
        ([1], result(4, -math.inf, done=True), False, "diverged"),
        ([1], None, True, "errored"),
        ([], {"loss": 0.3}, False, "finished"),  # no iteration: nothing says it was cut
    ],
)
def test_outcome_of_an_ending(
    seen: list[int], last: dict[str, Any] | None, error: bool, kind: str
) -> None:
    log = OutcomeLog("loss", MAX)
    for step in seen:
        log.record("t", result(step, 1.0 / step))
    outcome = log.outcome("t", last, error)
    assert outcome.kind == kind
    if last is not None and kind in ("finished", "stopped"):
        assert outcome.last_value == last["loss"]
    assert log.outcome("t", None).values == {}  # the trial is forgotten


def test_a_resumed_sweep_keeps_the_states(tmp_path: Path) -> None:
    """Tune saves the searcher and restores it in a resumed sweep; a trial live at the save
    ends after the restore with the steps it reported before."""
    alg = searcher("optuna")
    feed(alg)
    alg.suggest("live")
    alg.on_trial_result("live", result(1, 0.3))
    path = str(tmp_path / "searcher.pkl")
    alg.save(path)
    restored = searcher("optuna")
    restored.restore(path)
    restored.on_trial_complete("live", result=result(2, 0.2, done=True))
    states = optuna_states(restored.inner)
    assert [s for s, _, _ in states] == [*EXPECTED, "PRUNED"]
    assert states[-1][1:] == (0.2, {1: 0.3, 2: 0.2})
    assert states[1][2] == {1: 0.8, 2: 0.6}


@pytest.mark.parametrize("name", ["optuna", "hyperopt"])
def test_warm_trials_join_the_history_in_the_same_states(name: str, tmp_path: Path) -> None:
    alg = searcher(name, warm=WARM3)
    assert [alg.suggest(f"w{i}") for i in range(3)] == WARM3
    finish(alg, "w0", [0.6, 0.5, 0.4, 0.3])
    stop(alg, "w1", [0.9, 0.8])
    stop(alg, "w2", [0.9, math.nan])
    path = str(tmp_path / "searcher.pkl")
    alg.save(path)
    restored = searcher(name, warm=WARM3)
    restored.restore(path)
    inner = restored.inner.inner
    if name == "optuna":
        states = optuna_states(inner)
        assert states == [
            ("COMPLETE", 0.3, {1: 0.6, 2: 0.5, 3: 0.4, 4: 0.3}),
            ("PRUNED", 0.8, {1: 0.9, 2: 0.8}),
            ("FAIL", None, {1: 0.9}),
        ]
    else:
        trials = hyperopt_trials(inner)
        losses = [doc["result"]["loss"] for doc in trials.trials]
        assert len(losses) == 2 and 0 < losses[0] < 1 < losses[1]


def test_only_optuna_and_hyperopt_are_wrapped_a_configured_one_too() -> None:
    from ray.tune.search.optuna import OptunaSearch

    configured = OptunaSearch()
    sweep = Sweep(
        name="feedback", train_func=train_func, space=SPACE, metric="loss", mode="min",
        searcher=configured, num_trials=4, max_iterations=MAX,
    )  # fmt: skip
    alg = build_search(sweep).search_alg
    assert isinstance(alg, TrialFeedbackSearcher) and alg.inner is configured
    assert not isinstance(searcher("random"), TrialFeedbackSearcher)
