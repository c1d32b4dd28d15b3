"""Real Optuna/HyperOpt runs, the Ray Tune searchers (no cluster started) and PBT mutations."""

from __future__ import annotations

import pickle
import random
from pathlib import Path
from typing import Any

import hyperopt
import numpy as np
import optuna
import pytest

from sweeplab.errors import SpecError
from sweeplab.space import (
    Space,
    choice,
    compile_to_hyperopt,
    compile_to_optuna,
    decode_config,
    grid,
    load_space,
    loguniform,
    pbt_explore_fn,
    pbt_mutations,
    qloguniform,
    quniform,
    randint,
    uniform,
)
from sweeplab.strategies import build_tune_search

optuna.logging.set_verbosity(optuna.logging.WARNING)
ROOT = Path(__file__).resolve().parents[2]

SPACE = Space(
    {
        "lr": loguniform(1e-4, 1e-1),
        "layers": randint(1, 4),
        "width": qloguniform(16, 512, 16),
        "dropout": quniform(0.0, 0.5, 0.05),
        "hidden": choice([[64, 64], [128]]),
        "epochs": 3,
        "model": {"act": choice(["relu", "gelu"]), "scale": uniform(0.5, 2.0)},
        "optimizer": choice(
            {
                "sgd": {
                    "momentum": uniform(0, 0.99),
                    "schedule": choice({"cosine": {"t_max": randint(1, 10)}, "none": {}}),
                },
                "adam": {"beta1": uniform(0.8, 0.999), "eps": 1e-8},
            }
        ),
    }
)


def _objective(config: dict[str, Any]) -> float:
    bonus = 0.1 if config["optimizer"]["name"] == "adam" else 0.0
    return (np.log10(config["lr"]) + 2.5) ** 2 + config["dropout"] + bonus


def test_optuna_study_optimize() -> None:
    define = compile_to_optuna(SPACE)
    configs = []

    def objective(trial: optuna.Trial) -> float:
        constants = define(trial)
        config = decode_config(SPACE, {**constants, **trial.params})
        configs.append(config)
        return _objective(config)

    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=0))
    study.optimize(objective, n_trials=30)
    assert len(configs) == 30
    for config in configs:
        SPACE.validate_config(config)
    assert {c["optimizer"]["name"] for c in configs} == {"sgd", "adam"}


def test_hyperopt_fmin() -> None:
    configs = []

    def objective(sample: dict[str, Any]) -> float:
        config = decode_config(SPACE, sample)
        configs.append(config)
        return _objective(config)

    hyperopt.fmin(
        objective,
        compile_to_hyperopt(SPACE),
        algo=hyperopt.tpe.suggest,
        max_evals=30,
        rstate=np.random.default_rng(0),
        show_progressbar=False,
    )
    assert len(configs) == 30
    for config in configs:
        SPACE.validate_config(config)


def _run_searcher(name: str, seed: int, n: int = 12) -> list[dict[str, Any]]:
    ts = build_tune_search(SPACE, name, metric="loss", mode="min", seed=seed, num_trials=n)
    assert ts.num_samples == n
    assert ts.param_space == {}
    alg = ts.search_alg
    alg.set_search_properties("loss", "min", ts.param_space)
    configs = []
    for i in range(n):
        config = decode_config(SPACE, alg.suggest(f"trial_{i}"))
        configs.append(config)
        alg.on_trial_complete(f"trial_{i}", result={"loss": _objective(config)})
    return configs


@pytest.mark.parametrize("name", ["random", "optuna", "hyperopt"])
def test_tune_searchers_suggest_valid_reproducible_configs(name: str) -> None:
    first = _run_searcher(name, seed=3)
    for config in first:
        SPACE.validate_config(config)
    assert _run_searcher(name, seed=3) == first
    assert _run_searcher(name, seed=4) != first


def test_random_searcher_suggests_final_shape_and_save_restore_continues(tmp_path: Path) -> None:
    ts = build_tune_search(SPACE, "random", metric="loss", mode="max", seed=0, num_trials=10)
    alg = ts.search_alg
    head = [alg.suggest(f"t{i}") for i in range(3)]
    assert head == SPACE.sample(seed=0, n=3)
    alg.save(str(tmp_path / "searcher.pkl"))
    tail = [alg.suggest(f"t{i}") for i in range(3, 6)]

    fresh = build_tune_search(SPACE, "random", metric="loss", mode="max", seed=99, num_trials=10)
    fresh.search_alg.restore(str(tmp_path / "searcher.pkl"))
    assert [fresh.search_alg.suggest(f"t{i}") for i in range(3, 6)] == tail
    assert pickle.loads(pickle.dumps(alg)).suggest("t6") == alg.suggest("t6")


def _grid_configs(space: Space, seed: int, repeats: int, tmp_path: Path) -> list[dict[str, Any]]:
    from ray.tune.experiment import Experiment

    ts = build_tune_search(space, "grid", metric="loss", mode="min", seed=seed, num_trials=repeats)
    assert ts.num_samples == repeats
    experiment = Experiment(
        name="grid",
        run=lambda config: None,
        config=pickle.loads(pickle.dumps(ts.param_space)),
        num_samples=ts.num_samples,
        storage_path=str(tmp_path),
    )
    ts.search_alg.add_configurations([experiment])
    configs = []
    while (trial := ts.search_alg.next_trial()) is not None:
        configs.append(decode_config(space, trial.config))
    return configs


def test_grid_searcher_exhausts_the_grid(tmp_path: Path) -> None:
    space = Space(
        {
            "g": grid([1, 2, 3]),
            "model": {"act": grid(["relu", "gelu"]), "scale": uniform(0, 1)},
            "lr": loguniform(1e-4, 1e-1),
            "optimizer": SPACE.params["optimizer"],
            "epochs": 2,
        }
    )
    configs = _grid_configs(space, seed=0, repeats=2, tmp_path=tmp_path)
    assert len(configs) == space.grid_size * 2 == 12
    combos = [(c["g"], c["model"]["act"]) for c in configs]
    assert sorted(set(combos)) == sorted((g, a) for g in (1, 2, 3) for a in ("relu", "gelu"))
    assert all(combos.count(combo) == 2 for combo in set(combos))
    assert all(c["epochs"] == 2 for c in configs)
    assert _grid_configs(space, seed=0, repeats=2, tmp_path=tmp_path) == configs
    assert _grid_configs(space, seed=1, repeats=2, tmp_path=tmp_path) != configs


def test_build_tune_search_rejects_bad_arguments() -> None:
    with pytest.raises(SpecError, match="searcher must be one of"):
        build_tune_search(SPACE, "bohb", metric="m", mode="min", seed=0, num_trials=1)
    with pytest.raises(SpecError, match="mode"):
        build_tune_search(SPACE, "random", metric="m", mode="up", seed=0, num_trials=1)
    with pytest.raises(SpecError, match="num_trials"):
        build_tune_search(SPACE, "random", metric="m", mode="min", seed=0, num_trials=0)


def test_pbt_mutations_shape() -> None:
    mutations = pbt_mutations(SPACE)
    assert set(mutations) == {"lr", "layers", "width", "dropout", "hidden", "model", "optimizer"}
    assert mutations["hidden"] == [[64, 64], [128]]
    assert mutations["model"]["act"] == ["relu", "gelu"]
    assert mutations["optimizer"] == {"name": ["sgd", "adam"]}
    assert callable(mutations["lr"])
    pickle.dumps(mutations)
    pickle.dumps(pbt_explore_fn(SPACE))


@pytest.mark.parametrize("path", [SPACE, *sorted((ROOT / "search_spaces").glob("*.yaml"))])
def test_pbt_explore_stays_in_the_space(path: Any) -> None:
    from ray.tune.schedulers.pbt import _explore

    space = path if isinstance(path, Space) else load_space(path)
    mutations, explore = pbt_mutations(space), pbt_explore_fn(space)
    random.seed(0)
    config = space.sample(seed=0)[0]
    for _ in range(300):
        config, _ = _explore(config, mutations, 0.25, (0.5, 2.0), explore)
        space.validate_config(config)


def test_pbt_perturbation_alone_leaves_bounds() -> None:
    """Why pbt_explore_fn exists: Ray multiplies without clipping."""
    from ray.tune.schedulers.pbt import _explore

    space = Space({"x": uniform(0.5, 1.0)})
    random.seed(0)
    config, _ = _explore({"x": 1.0}, pbt_mutations(space), 0.0, (2.0,), None)
    assert config["x"] == 2.0
    config, _ = _explore({"x": 1.0}, pbt_mutations(space), 0.0, (2.0,), pbt_explore_fn(space))
    assert config["x"] == 1.0
