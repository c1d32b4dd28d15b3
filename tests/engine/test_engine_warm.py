"""Warm start: which configs run first, what is fitted or dropped, what the searcher learns."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from mlflow_store import store_uri
from toy_spec import progress_rows, record_sweep, run_toy_sweep

from sweeplab import SpecError, Sweep, choice, grid, loguniform, quniform, randint, uniform
from sweeplab.engine import WarmStartPlan, plan_warm_start
from sweeplab.engine._search import build_search
from sweeplab.engine._warm import default_top
from sweeplab.raycompat import hyperopt_trials, optuna_study
from sweeplab.space import decode_config


def train_func(config: dict[str, Any]) -> None:
    pass


SPACE = {"lr": loguniform(1e-4, 1e-1), "opt": choice({"sgd": {"m": uniform(0, 0.9)}, "adam": {}})}
WARM = [{"lr": 0.01, "opt": {"name": "adam"}}, {"lr": 0.001, "opt": {"name": "sgd", "m": 0.5}}]


def make(**fields: Any) -> Sweep:
    base: dict[str, Any] = {
        "name": "warm", "train_func": train_func, "space": SPACE, "metric": "loss",
        "mode": "min", "seed": 0, "num_trials": 8,
    }  # fmt: skip
    return Sweep(**{**base, **fields})


def searcher_of(sweep: Sweep, tracking_uri: str | None = None) -> Any:
    search = build_search(sweep, plan_warm_start(sweep, tracking_uri))
    alg = search.search_alg
    alg.set_search_properties(sweep.metric, sweep.mode, search.param_space)
    return alg


@pytest.mark.parametrize("searcher", ["random", "optuna", "hyperopt"])
def test_warm_configs_come_first(searcher: str) -> None:
    sweep = make(searcher=searcher, warm_start=WARM, num_trials=5)
    alg = searcher_of(sweep)
    suggested = [alg.suggest(f"t{i}") for i in range(4)]
    assert suggested[:2] == WARM
    for index, config in enumerate(suggested[2:], start=2):
        sweep.space.validate_config(decode_config(sweep.space, config))
        alg.on_trial_complete(f"t{index}", result={"loss": 1.0})
    alg.on_trial_complete("t0", result={"loss": 0.5})


@pytest.mark.parametrize(
    "changes",
    [
        {"searcher": "grid"},
        {"scheduler": "pbt"},
        {"warm_start": [{"lr": 5.0}]},
        {"warm_start": {"top": 2}},
        {"warm_start": {"sweep": "cold", "top": 0}},
        {"warm_start": {"sweep": "cold", "k": 2}},
        {"warm_start": {"sweep": "a/b"}},
        {"warm_start": "a/b"},
        {"warm_start": 3},
    ],
)
def test_warm_start_rules(changes: dict[str, Any]) -> None:
    fields: dict[str, Any] = {
        "space": {**SPACE, "b": grid([1, 2])},
        "warm_start": [{**c, "b": 1} for c in WARM],
        **changes,
    }
    with pytest.raises(SpecError, match="warm_start"):
        make(**fields)


def test_a_given_list_is_strict_deduplicated_and_capped() -> None:
    with pytest.raises(SpecError, match=r"warm_start\[1\].*lr"):
        make(warm_start=[WARM[0], {"lr": 5.0, "opt": {"name": "adam"}}])
    plan = plan_warm_start(make(warm_start=[WARM[0], WARM[1], WARM[0]], num_trials=8))
    assert plan is not None
    assert [w.config for w in plan.configs] == WARM
    assert [w.origin for w in plan.configs] == ["warm_start[0]", "warm_start[1]"]
    assert plan.skipped == ("warm_start[2]: the same config as warm_start[0]",)
    capped = plan_warm_start(make(warm_start=WARM, num_trials=1))
    assert capped is not None and [w.config for w in capped.configs] == WARM[:1]
    assert plan_warm_start(make()) is None


@pytest.mark.parametrize(("num_trials", "top"), [(1, 1), (4, 1), (8, 2), (20, 5), (100, 5)])
def test_default_top(num_trials: int, top: int) -> None:
    assert default_top(num_trials) == top


# -- an earlier sweep, recorded by sweeplab's own tracker into a real SQLite MLflow store ---------

COLD_SPACE = {
    "lr": loguniform(1e-4, 1e-1), "width": randint(16, 64), "drop": quniform(0.0, 0.5, 0.1),
    "opt": choice({"sgd": {"m": uniform(0, 0.9)}, "adam": {}}),
}  # fmt: skip
# (trial id, config, reported losses, errored); by best loss: t4 t2 t5 t1 t3 t0, then t6
SGD3 = {"name": "sgd", "m": 0.3}
COLD = [
    ("t0", {"lr": 0.05, "width": 16, "drop": 0.1, "opt": {"name": "adam"}}, [0.9, 0.8], False),
    ("t1", {"lr": 0.002, "width": 64, "drop": 0.4, "opt": {"name": "sgd", "m": 0.8}}, [0.5], False),
    ("t2", {"lr": 0.09, "width": 48, "drop": 0.2, "opt": SGD3}, [0.4, 0.1], False),
    ("t3", {"lr": 0.08, "width": 40, "drop": 0.2, "opt": SGD3}, [0.7], False),
    ("t4", {"lr": 0.01, "width": 20, "drop": 0.0, "opt": {"name": "adam"}}, [0.05], True),
    ("t5", {"lr": 0.0001, "width": 32, "drop": 0.5, "opt": {"name": "adam"}}, [0.3, 0.2], False),
    ("t6", {"lr": 0.001, "width": 32, "drop": 0.0, "opt": {"name": "adam"}}, [], False),
]  # fmt: skip


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("mlflow")
    uri = store_uri(folder)
    record_sweep(uri, folder / "cold", "cold", COLD)
    record_sweep(uri, folder / "old", "old", COLD[:3])  # its config tags are deleted below
    record_sweep(uri, folder / "empty", "empty", [COLD[4], COLD[6]])  # errored, silent
    return uri


def configs(plan: WarmStartPlan | None) -> list[dict[str, Any]]:
    assert plan is not None
    return [warm.config for warm in plan.configs]


def test_the_best_configs_by_rank_come_first(store: str) -> None:
    from sweeplab.tracking import ranked_configs

    ranking = ranked_configs("cold", store)
    assert [t.trial_id for t in ranking.trials] == ["t4", "t2", "t5", "t1", "t3", "t0", "t6"]
    assert ranking.trials[1].config == COLD[2][1], "configs come back with their types"
    cold = {trial_id: config for trial_id, config, _, _ in COLD}
    plan = plan_warm_start(make(space=COLD_SPACE, warm_start="cold", num_trials=8), store)
    assert configs(plan) == [cold["t2"], cold["t5"]]  # default top: 8 // 4; t4 errored
    assert plan is not None and plan.lines()[1].startswith("  1. rank 2 (trial t2): ")
    assert all(not warm.changes for warm in plan.configs)
    top = make(space=COLD_SPACE, warm_start={"sweep": "cold", "top": 10}, num_trials=40)
    assert configs(plan_warm_start(top, store)) == [cold[t] for t in ("t2", "t5", "t1", "t3", "t0")]


def test_configs_are_fitted_into_a_changed_space_and_the_changes_said(store: str) -> None:
    space = {  # width removed, lr narrowed, drop coarser, adam gone
        "lr": loguniform(1e-3, 0.05), "drop": quniform(0.0, 0.5, 0.25),
        "opt": choice({"sgd": {"m": uniform(0, 0.5)}, "momentum": {}}), "seed": 1,
    }  # fmt: skip
    sweep = make(space=space, warm_start={"sweep": "cold", "top": 3})
    plan = plan_warm_start(sweep, store)
    assert plan is not None
    first, second, third = plan.configs
    assert first.origin == "rank 2 (trial t2)"
    assert first.config == {"lr": 0.05, "drop": 0.25, "opt": {"name": "sgd", "m": 0.3}, "seed": 1}
    assert [(c.path, c.kind) for c in first.changes] == [
        ("lr", "clipped"), ("drop", "snapped"), ("width", "dropped"),
    ]  # fmt: skip
    assert [(c.path, c.kind) for c in second.changes] == [
        ("lr", "clipped"), ("opt", "resampled"), ("width", "dropped"),
    ]  # fmt: skip
    assert second.config["lr"] == 1e-3 and second.config["drop"] == 0.5
    assert third.origin == "rank 4 (trial t1)" and third.config["opt"] == {"name": "sgd", "m": 0.5}
    text = "\n".join(plan.lines())
    assert "width: 48 dropped (not in the space)" in text
    assert "lr: 0.09 clipped to 0.05 (outside loguniform [0.001, 0.05])" in text
    assert plan_warm_start(sweep, store) == plan, "the sweep's seed makes the draws repeat"
    for warm in plan.configs:
        make(space=space).space.validate_config(warm.config)


def test_configs_that_become_the_same_are_tried_once(store: str) -> None:
    space = {"drop": quniform(0.0, 0.5, 0.1), "opt": choice(["sgd"])}  # t2 and t3 now agree
    plan = plan_warm_start(make(space=space, warm_start={"sweep": "cold", "top": 4}), store)
    assert plan is not None
    assert [w.origin.split()[1] for w in plan.configs] == ["2", "3", "4", "6"]
    assert plan.skipped == ("rank 5 (trial t3): the same config as rank 2 (trial t2)",)


def test_runs_without_the_config_tag_are_read_from_their_params(store: str) -> None:
    import mlflow

    client = mlflow.MlflowClient(store)
    experiment = client.get_experiment_by_name("old")
    for run in client.search_runs([experiment.experiment_id], "tags.`sweeplab.role` = 'trial'"):
        client.delete_tag(run.info.run_id, "sweeplab.config")
    plan = plan_warm_start(make(space=COLD_SPACE, warm_start={"sweep": "old", "top": 3}), store)
    assert configs(plan) == [COLD[2][1], COLD[1][1], COLD[0][1]]


def test_an_unknown_or_empty_sweep_is_a_spec_error_and_creates_no_store(
    store: str, tmp_path: Path
) -> None:
    missing = tmp_path / "none.db"
    with pytest.raises(SpecError, match=r"^Sweep field `warm_start`: No sweep named 'cold'"):
        plan_warm_start(make(warm_start="cold"), f"sqlite:///{missing}")
    assert not missing.exists()
    with pytest.raises(SpecError, match="No sweep named 'hot'"):
        plan_warm_start(make(warm_start="hot"), store)
    with pytest.raises(SpecError, match="has no ranked trial that reported 'loss'"):
        plan_warm_start(make(warm_start="empty"), store)


# -- history: a warm trial's result reaches the inner searcher ------------------------------------

RICH = {
    "lr": loguniform(1e-4, 1e-1), "n": randint(1, 4), "d": quniform(0.0, 0.5, 0.1),
    "h": choice([[64, 64], [128]]), "opt": choice({"sgd": {"m": uniform(0, 0.9)}, "adam": {}}),
    "k": 3,
}  # fmt: skip
RICH_WARM = [
    {"lr": 0.01, "n": 2, "d": 0.3, "h": [128], "opt": {"name": "adam"}, "k": 3},
    {"lr": 0.001, "n": 4, "d": 0.0, "h": [64, 64], "opt": {"name": "sgd", "m": 0.5}, "k": 3},
]


def observed(searcher: str, inner: Any) -> list[tuple[dict[str, Any], float]]:
    """The (params, value) pairs the inner searcher has as finished trials, oldest first."""
    if searcher == "optuna":
        return [(t.params, t.value) for t in optuna_study(inner).trials if t.value is not None]
    # HyperOpt's loss of a finished trial is `1/2 + atan(loss) / pi` (sweeplab's order code).
    return [
        (
            {k: v[0] for k, v in t["misc"]["vals"].items() if v},
            inner.metric_op * math.tan((t["result"]["loss"] - 0.5) * math.pi),
        )
        for t in hyperopt_trials(inner).trials
        if t["result"].get("status") == "ok"
    ]


@pytest.mark.parametrize("mode", ["min", "max"])
@pytest.mark.parametrize("searcher", ["optuna", "hyperopt"])
def test_a_finished_warm_trial_joins_the_searchers_history(searcher: str, mode: str) -> None:
    sweep = make(
        space=RICH, searcher=searcher, mode=mode, warm_start=RICH_WARM, num_trials=30,
        max_iterations=2,
    )  # fmt: skip
    alg = searcher_of(sweep)
    inner = alg.inner.inner  # the searcher inside sweeplab's `TrialFeedbackSearcher`
    assert [alg.suggest("w0"), alg.suggest("w1")] == RICH_WARM
    assert observed(searcher, inner) == []
    alg.on_trial_result("w0", {"loss": 0.7, "training_iteration": 1})
    alg.on_trial_complete("w0", result={"loss": 0.5, "training_iteration": 2})
    ((params, value),) = observed(searcher, inner)
    assert value == pytest.approx(0.5)
    expected = {"lr": 0.01, "n": 2, "d": 0.3}
    assert {k: params[k] for k in expected} == expected
    alg.on_trial_complete("w1", error=True)  # an errored warm trial teaches nothing
    assert len(observed(searcher, inner)) == 1
    # The searcher goes on (past its random start-up trials) with the warm trial in its history.
    for index in range(22):
        config = alg.suggest(f"t{index}")
        sweep.space.validate_config(decode_config(sweep.space, config))
        alg.on_trial_complete(f"t{index}", result={"loss": 1.0 + index})
    values = [v for _, v in observed(searcher, inner)]
    assert values[0] == pytest.approx(0.5) and len(values) == 23
    assert all(math.isfinite(v) for v in values)


def test_the_random_searcher_has_no_history_and_is_not_disturbed() -> None:
    alg = searcher_of(make(warm_start=WARM, num_trials=4))
    assert alg.suggest("w0") == WARM[0]
    alg.on_trial_complete("w0", result={"loss": 0.5})
    assert alg.suggest("w1") == WARM[1]
    assert alg.suggest("t2") is not None


# -- end to end: a cold sweep, then a warm one over a changed space -------------------------------


@pytest.mark.slow
def test_a_warm_sweep_starts_from_the_cold_sweeps_best(ray_local: None, in_tmp: Path) -> None:
    import json

    import mlflow

    cold = run_toy_sweep(
        in_tmp,
        'name="cold", space={"x": uniform(0, 1), "lr": loguniform(1e-3, 0.3), '
        '"extra": randint(1, 3)}, metric="loss", mode="min", num_trials=4, seed=3',
        epochs=2, sleep=0.01, name="cold",
    )  # fmt: skip
    assert cold.errored == 0
    top = [trial.config for trial in cold.summary.trials[:2]]
    warm = run_toy_sweep(
        in_tmp,
        'name="warm", space={"x": uniform(0, 0.2), "lr": loguniform(1e-3, 0.3)}, '
        'metric="loss", mode="min", num_trials=3, seed=0, searcher="optuna", '
        'warm_start={"sweep": "cold", "top": 2}',
        epochs=2, sleep=0.01, name="warm",
    )  # fmt: skip
    assert warm.errored == 0 and warm.trials == 3
    expected = [{"x": min(c["x"], 0.2), "lr": c["lr"]} for c in top]
    rows = progress_rows(warm)
    # The loop numbers its trial ids in the order the searcher suggested them.
    received = [json.loads(rows[t][0]["config_json"]) for t in sorted(rows)]
    assert received[:2] == expected  # the adapted top-2, in rank order, ran first
    assert warm.warm_start is not None
    lines = warm.warm_start.lines()
    assert lines[0].startswith("warm start: 2 configs from sweep 'cold', ranked by best loss")
    for line, config in zip(lines[1:], top, strict=True):
        assert f"extra: {config['extra']} dropped (not in the space)" in line
        assert ("x: " in line and "clipped to 0.2" in line) == (config["x"] > 0.2)
    assert any(c["x"] > 0.2 for c in top), "nothing was clipped; pick another seed"
    recorded = json.loads((warm.storage_dir / "warm_start.json").read_text())
    assert [c["config"] for c in recorded["configs"]] == expected
    client = mlflow.MlflowClient(f"sqlite:///{in_tmp / 'mlflow.db'}")
    parent = client.get_run(warm.summary.parent_run_id)
    assert parent.data.tags["sweeplab.warm_start"] == "sweep 'cold'"
    assert "warm_start.json" in {a.path for a in client.list_artifacts(parent.info.run_id)}
