"""Every space round-trips through dict, YAML and JSON to an equal object."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sweeplab.space import (
    Space,
    choice,
    flatten_config,
    grid,
    load_space,
    loguniform,
    qloguniform,
    quniform,
    randint,
    uniform,
)

ROOT = Path(__file__).resolve().parents[2]
SPACE_FILES = sorted((ROOT / "search_spaces").glob("*.y*ml"))

EXAMPLES: dict[str, dict[str, Any]] = {
    "uniform": {"x": uniform(-1, 1)},
    "uniform-point": {"x": uniform(0.5, 0.5)},
    "loguniform": {"lr": loguniform(1e-5, 1e-1)},
    "quniform-float": {"x": quniform(0.0, 1.0, 0.1)},
    "quniform-int": {"x": quniform(0, 100, 10)},
    "qloguniform-float": {"x": qloguniform(0.5, 100.0, 0.5)},
    "qloguniform-int": {"x": qloguniform(8, 1024, 8)},
    "randint": {"n": randint(-3, 3)},
    "randint-log": {"batch": randint(16, 512, log=True)},
    "randint-log-point": {"batch": randint(1, 1, log=True)},
    "choice-scalars": {"c": choice([None, True, 3, 2.5, "relu"])},
    "choice-lists": {"h": choice([[64, 64], [128], []])},
    "grid": {"g": grid([1, 2, 3]), "h": grid(["a", "b"])},
    "constants": {"i": 1, "f": 0.5, "s": "x", "b": False, "n": None, "l": [1, "a", [2.0]]},
    "nested": {"model": {"depth": randint(1, 4), "head": {"dropout": uniform(0, 0.5)}}},
    "conditional": {
        "optimizer": choice(
            {"sgd": {"momentum": uniform(0, 0.99)}, "adam": {"beta1": uniform(0.8, 0.999)}}
        )
    },
    "conditional-nested": {
        "optimizer": choice(
            {
                "sgd": {
                    "momentum": uniform(0, 0.99),
                    "schedule": choice({"cosine": {"t_max": randint(1, 10)}, "none": {}}),
                    "extra": {"nesterov": choice([True, False]), "k": 3},
                },
                "none": {},
            }
        ),
    },
    "empty": {},
}


@pytest.mark.parametrize("params", EXAMPLES.values(), ids=EXAMPLES.keys())
def test_round_trip(params: dict[str, Any]) -> None:
    space = Space(params)
    assert Space.from_dict(space.to_dict()) == space
    assert Space.from_yaml(space.to_yaml()) == space
    assert Space.from_json(space.to_json()) == space
    assert Space(space) == space


@pytest.mark.parametrize("path", SPACE_FILES, ids=[p.name for p in SPACE_FILES])
def test_search_space_files_load_and_round_trip(path: Path, tmp_path: Path) -> None:
    space = load_space(path)
    assert space.params
    assert Space.from_yaml(space.to_yaml()) == space
    as_json = tmp_path / "space.json"
    as_json.write_text(space.to_json())
    assert load_space(as_json) == space
    for config in space.sample(seed=0, n=20):
        space.validate_config(config)


def test_there_are_at_least_three_space_files() -> None:
    assert len(SPACE_FILES) >= 3


def test_yaml_format_reads_as_documented() -> None:
    text = """
lr: {loguniform: [1.0e-4, 1.0e-1]}
batch_size: {choice: [16, 32, 64]}
layers: {randint: {low: 1, high: 3}}
optimizer:
  choice:
    sgd: {momentum: {uniform: [0.0, 0.99]}}
    adam:
model: {uniform: 3, width: 5}
epochs: 10
"""
    space = Space.from_yaml(text)
    assert space == Space(
        {
            "lr": loguniform(1e-4, 1e-1),
            "batch_size": choice([16, 32, 64]),
            "layers": randint(1, 3),
            "optimizer": choice({"sgd": {"momentum": uniform(0, 0.99)}, "adam": {}}),
            "model": {"uniform": 3, "width": 5},
            "epochs": 10,
        }
    )
    assert "loguniform: [0.0001, 0.1]" in space.to_yaml()


def test_equality_and_params_are_read_only() -> None:
    a = Space({"x": uniform(0, 1), "y": 2})
    assert a == Space({"y": 2, "x": uniform(0.0, 1.0)})
    assert a != Space({"x": uniform(0, 2), "y": 2})
    assert a != {"x": uniform(0, 1)}
    with pytest.raises(TypeError):
        a.params["x"] = 1  # type: ignore[index]


def test_int_arguments_give_int_quantized_values() -> None:
    assert quniform(0, 10, 2) == randint(0, 10).__class__(0, 10, q=2)
    assert isinstance(Space({"x": quniform(0, 10, 2)}).sample(0)[0]["x"], int)
    assert isinstance(Space({"x": quniform(0.0, 10, 2)}).sample(0)[0]["x"], float)


def test_grid_size_and_describe() -> None:
    space = Space(
        {
            "g": grid([1, 2, 3]),
            "m": {"h": grid(["a", "b"])},
            "lr": loguniform(1e-4, 1e-1),
            "o": choice({"sgd": {"m": quniform(0.0, 0.9, 0.1)}, "adam": {}}),
            "k": 1,
        }
    )
    assert space.grid_size == 6
    assert Space({"x": uniform(0, 1)}).grid_size == 1
    assert space.describe() == [
        ("g", "grid [1, 2, 3]"),
        ("m.h", "grid ['a', 'b']"),
        ("lr", "loguniform [0.0001, 0.1]"),
        ("o", "choice of sgd | adam"),
        ("o.sgd.m", "quniform [0.0, 0.9] q=0.1"),
        ("k", "constant 1"),
    ]


def test_flatten_config() -> None:
    config = {"lr": 0.1, "optimizer": {"name": "sgd", "momentum": 0.9}, "h": [1, 2], "e": {}}
    assert flatten_config(config) == {
        "lr": 0.1,
        "optimizer.name": "sgd",
        "optimizer.momentum": 0.9,
        "h": [1, 2],
        "e": {},
    }


def test_importing_the_package_imports_no_backend() -> None:
    import subprocess
    import sys

    code = (
        "import sys, sweeplab.space; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'ray', 'optuna', 'hyperopt'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"
