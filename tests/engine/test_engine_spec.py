"""`Sweep` validation and spec-file loading: every bad field is one SpecError naming it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import sweeplab
from sweeplab import SpecError, Sweep, choice, grid, loguniform, uniform
from sweeplab.spec import load_spec


def train_func(config: dict[str, Any]) -> None:
    pass


BASE: dict[str, Any] = {
    "name": "demo",
    "train_func": train_func,
    "space": {"lr": loguniform(1e-4, 1e-1)},
    "metric": "loss",
    "mode": "min",
}


def make(**changes: Any) -> Sweep:
    return Sweep(**{**BASE, **changes})


def test_defaults() -> None:
    sweep = make()
    # One metric, 10 reports a trial: the best measured strategy (docs/search.md).
    assert sweep.searcher == "optuna" and sweep.scheduler == "adaptive-asha"
    assert sweep.defaulted == ("searcher", "scheduler")
    assert sweep.worker_resources == {"CPU": 1.0}
    assert isinstance(sweep.space, sweeplab.Space)
    assert sweep.min_workers == sweep.max_workers == 1


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"name": "a/b"}, "name"),
        ({"name": ".."}, "name"),
        ({"name": "x..y"}, "name"),
        ({"name": ""}, "name"),
        ({"name": 3}, "name"),
        ({"train_func": "train"}, "train_func"),
        ({"space": {"lr": 3, "a.b": 1}}, "space"),
        ({"metric": ""}, "metric"),
        ({"mode": "minimize"}, "mode"),
        ({"searcher": "bayes"}, "searcher"),
        ({"scheduler": "asha2"}, "scheduler"),
        ({"num_trials": 0}, "num_trials"),
        ({"num_trials": 2.5}, "num_trials"),
        ({"num_trials": True}, "num_trials"),
        ({"max_iterations": -1}, "max_iterations"),
        ({"workers_per_trial": 0}, "workers_per_trial"),
        ({"workers_per_trial": (3, 2)}, "workers_per_trial"),
        ({"workers_per_trial": (1, 2, 3)}, "workers_per_trial"),
        ({"use_gpu": "yes"}, "use_gpu"),
        ({"cpus_per_worker": -1}, "cpus_per_worker"),
        ({"cpus_per_worker": float("nan")}, "cpus_per_worker"),
        ({"gpus_per_worker": 1}, "gpus_per_worker"),
        ({"use_gpu": True, "gpus_per_worker": 0}, "gpus_per_worker"),
        ({"use_gpu": True, "gpus_per_worker": 0.5, "workers_per_trial": 2}, "gpus_per_worker"),
        ({"use_gpu": True, "gpus_per_worker": 0.5, "workers_per_trial": (1, 2)}, "gpus_per_worker"),
        ({"resources_per_worker": {"CPU": 1}}, "resources_per_worker"),
        ({"resources_per_worker": {"node_a": -1}}, "resources_per_worker"),
        ({"max_concurrent_trials": 0}, "max_concurrent_trials"),
        ({"checkpoints_to_keep": 0}, "checkpoints_to_keep"),
        ({"max_failures": -2}, "max_failures"),
        ({"time_budget_s": 0}, "time_budget_s"),
        ({"seed": -1}, "seed"),
        ({"placement_strategy": "RANDOM"}, "placement_strategy"),
        ({"metrics_from": "median"}, "metrics_from"),
        ({"rank_by": "worst"}, "rank_by"),
        ({"register_model": "a b"}, "register_model"),
        ({"warm_start": [{"lr": 5.0}]}, "warm_start"),
        ({"warm_start": 3}, "warm_start"),
        ({"scheduler": "pbt", "searcher": "optuna"}, "searcher"),
        ({"searcher": "grid"}, "searcher"),
    ],
)
def test_bad_field_names_the_field(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(SpecError, match=f"`{field}"):
        make(**changes)


def test_grid_searcher_needs_grid_parameter() -> None:
    sweep = make(searcher="grid", space={"lr": grid([0.1, 0.01]), "x": uniform(0, 1)})
    assert sweep.space.grid_size == 2


def test_elastic_workers() -> None:
    sweep = make(workers_per_trial=[1, 3])
    assert sweep.workers_per_trial == (1, 3)
    assert (sweep.min_workers, sweep.max_workers) == (1, 3)


def test_gpu_resources() -> None:
    sweep = make(use_gpu=True, gpus_per_worker=0.5, resources_per_worker={"node_a": 1})
    assert sweep.worker_resources == {"CPU": 1.0, "GPU": 0.5, "node_a": 1.0}
    # Workers of one trial on nodes of their own may each take a fraction of a GPU.
    spread = make(
        use_gpu=True, gpus_per_worker=0.5, workers_per_trial=2, placement_strategy="STRICT_SPREAD"
    )
    assert spread.worker_resources["GPU"] == 0.5


SPEC_OK = """
import sweeplab
def train_func(config):
    pass
sweep = sweeplab.Sweep(name="ok", train_func=train_func,
    space={"x": sweeplab.choice({"a": {"y": sweeplab.uniform(0, 1)}, "b": {}})},
    metric="m", mode="max")
"""


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def broken(:\n", r"bad\.py:1: syntax error"),
        ("import sweeplab\nx = 1\n", r"bad\.py: defines no module-level `sweep"),
        ("sweep = 3\n", r"bad\.py: `sweep` must be a sweeplab\.Sweep"),
        ("import not_a_module_xyz\n", r"bad\.py:1: ModuleNotFoundError"),
        (
            "import sweeplab\n\nsweep = sweeplab.Sweep(name='x', train_func=print, space={},\n"
            "    metric='m', mode='up')\n",
            r"bad\.py:3: Sweep field `mode`",
        ),
    ],
)
def test_load_spec_errors_name_file_and_line(tmp_path: Path, source: str, expected: str) -> None:
    path = tmp_path / "bad.py"
    path.write_text(source)
    with pytest.raises(SpecError, match=expected):
        load_spec(path)


def test_load_spec_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="no such spec file"):
        load_spec(tmp_path / "nope.py")


def test_load_spec_ok(tmp_path: Path) -> None:
    path = tmp_path / "ok.py"
    path.write_text(SPEC_OK)
    sweep = load_spec(path)
    assert sweep.name == "ok"
    config = sweep.space.sample(seed=1)[0]
    assert config["x"]["name"] in ("a", "b")


def test_choice_is_reexported() -> None:
    assert sweeplab.choice is choice
    assert set(sweeplab.__all__) >= {"Sweep", "Space", "run_sweep", "load_sweep", "SpecError"}
