"""Every bad declaration raises a SpecError naming the parameter path, the rule and the values."""

from __future__ import annotations

import math
from typing import Any

import pytest

from sweeplab.errors import SpecError
from sweeplab.space import (
    Space,
    choice,
    grid,
    loguniform,
    qloguniform,
    quniform,
    randint,
    uniform,
)

BAD_SPACES: list[tuple[str, dict[str, Any], str, str]] = [
    # (id, dict form, path in message, rule fragment)
    ("log-low-zero", {"lr": {"loguniform": [0, 1]}}, "lr:", "`low > 0`"),
    ("log-low-negative", {"lr": {"loguniform": [-1.0, 1]}}, "lr:", "`low > 0`"),
    ("qlog-low-zero", {"lr": {"qloguniform": [0.0, 1.0, 0.1]}}, "lr:", "`low > 0`"),
    ("low-gt-high", {"x": {"uniform": [1.0, 0.5]}}, "x:", "`low <= high`"),
    ("low-gt-high-randint", {"x": {"randint": [3, 1]}}, "x:", "`low <= high`"),
    ("low-gt-high-quniform", {"x": {"quniform": [2.0, 1.0, 0.5]}}, "x:", "`low <= high`"),
    ("nan-bound", {"x": {"uniform": [math.nan, 1.0]}}, "x:", "finite"),
    ("inf-bound", {"x": {"uniform": [0.0, math.inf]}}, "x:", "finite"),
    ("str-bound", {"x": {"uniform": ["0", 1.0]}}, "x:", "numbers"),
    ("yaml-exponent-bound", {"x": {"loguniform": ["1e-4", 1.0]}}, "x:", "write 1.0e-4"),
    ("bool-bound", {"x": {"uniform": [False, 1.0]}}, "x:", "numbers"),
    ("randint-float", {"x": {"randint": [0.5, 3]}}, "x:", "integers"),
    ("randint-float-integral", {"x": {"randint": [1.0, 3]}}, "x:", "integers"),
    (
        "randint-log-low-zero",
        {"x": {"randint": {"low": 0, "high": 8, "log": True}}},
        "x:",
        "`low >= 1` must hold for a log integer range, but got (low=0, high=8).",
    ),
    (
        "randint-log-low-gt-high",
        {"x": {"randint": {"low": 9, "high": 8, "log": True}}},
        "x:",
        "`low <= high` must hold, but got (low=9, high=8).",
    ),
    (
        "randint-log-not-bool",
        {"x": {"randint": {"low": 1, "high": 8, "log": "yes"}}},
        "x:",
        "`log` must be true or false",
    ),
    (
        "randint-unknown-key",
        {"x": {"randint": {"low": 1, "high": 8, "step": 2}}},
        "x:",
        "randint takes the keys ['low', 'high'] (and optionally ['log'])",
    ),
    ("uniform-log-key", {"x": {"uniform": {"low": 1.0, "high": 8.0, "log": True}}}, "x:", "keys"),
    ("q-zero", {"x": {"quniform": [0.0, 1.0, 0.0]}}, "x:", "`q`"),
    ("q-negative", {"x": {"quniform": [0.0, 1.0, -0.1]}}, "x:", "`q`"),
    ("q-nan", {"x": {"quniform": [0.0, 1.0, math.nan]}}, "x:", "`q`"),
    ("q-inf", {"x": {"qloguniform": [1.0, 2.0, math.inf]}}, "x:", "`q`"),
    ("q-too-large", {"x": {"quniform": [0.1, 0.2, 0.5]}}, "x:", "no multiple of `q`"),
    ("q-too-large-int", {"x": {"quniform": [1, 3, 4]}}, "x:", "no multiple of `q`"),
    ("empty-choice", {"x": {"choice": []}}, "x:", "not be empty"),
    ("empty-grid", {"x": {"grid": []}}, "x:", "not be empty"),
    ("empty-conditional", {"x": {"choice": {}}}, "x:", "not be empty"),
    ("duplicate-option", {"x": {"choice": [1, 2, 1]}}, "x:", "distinct"),
    ("duplicate-int-float", {"x": {"grid": [1, 1.0]}}, "x:", "distinct"),
    ("duplicate-list", {"x": {"choice": [[1, 2], [1, 2]]}}, "x:", "distinct"),
    ("dict-option", {"x": {"choice": [{"a": 1}]}}, "x:", "an option must be"),
    ("nan-option", {"x": {"choice": [math.nan]}}, "x:", "finite"),
    ("choice-not-list", {"x": {"choice": "abc"}}, "x:", "list"),
    ("bad-args", {"x": {"uniform": [0.0]}}, "x:", "takes a list"),
    ("empty-name", {"": 1}, "'':", "non-empty string"),
    ("int-name", {1: 1}, "1:", "non-empty string"),
    ("dot-name", {"a.b": 1}, "a.b:", "'.'"),
    ("slash-name", {"a/b": 1}, "a/b:", "'/'"),
    ("underscore-name", {"_x": 1}, "_x:", "'_'"),
    ("nested-bad-name", {"model": {"a.b": 1}}, "model.a.b:", "'.'"),
    (
        "name-in-branch",
        {"opt": {"choice": {"sgd": {"name": {"uniform": [0.0, 1.0]}}}}},
        "opt.sgd.name:",
        "reserved",
    ),
    (
        "grid-in-branch",
        {"opt": {"choice": {"sgd": {"momentum": {"grid": [0.0, 0.9]}}}}},
        "opt.sgd.momentum:",
        "grid cannot",
    ),
    (
        "grid-in-nested-branch",
        {"opt": {"choice": {"sgd": {"inner": {"x": {"grid": [1, 2]}}}}}},
        "opt.sgd.inner.x:",
        "grid cannot",
    ),
    (
        "bad-bound-in-branch",
        {"optimizer": {"choice": {"sgd": {"momentum": {"uniform": [1.0, 0.5]}}}}},
        "optimizer.sgd.momentum:",
        "`low <= high` must hold, but got (low=1.0, high=0.5).",
    ),
    ("option-name-int", {"opt": {"choice": {1: {}}}}, "opt:", "option name"),
    ("option-name-slash", {"opt": {"choice": {"a/b": {}}}}, "opt:", "option name"),
    ("branch-not-mapping", {"opt": {"choice": {"sgd": 3}}}, "opt:", "mapping"),
    ("constant-object", {"x": object()}, "x:", "a constant must be"),
    ("constant-inf", {"x": math.inf}, "x:", "finite"),
]


@pytest.mark.parametrize(
    ("data", "path", "rule"), [case[1:] for case in BAD_SPACES], ids=[c[0] for c in BAD_SPACES]
)
def test_bad_space_raises_spec_error_with_path(data: dict[str, Any], path: str, rule: str) -> None:
    with pytest.raises(SpecError) as info:
        Space.from_dict(data)
    message = str(info.value)
    assert message.startswith(path), message
    assert rule in message, message
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "make",
    [
        lambda: uniform(1, 0),
        lambda: loguniform(0, 1),
        lambda: quniform(0, 1, 0),
        lambda: qloguniform(-1, 1, 1),
        lambda: randint(0.5, 2),
        lambda: randint(0, 2, log=True),
        lambda: choice([]),
        lambda: grid([1, 1]),
        lambda: choice({}),
        lambda: choice({3: {}}),
    ],
)
def test_constructors_validate_eagerly(make: Any) -> None:
    with pytest.raises(SpecError):
        make()


@pytest.mark.parametrize(
    ("params", "path"),
    [
        ({"model": {"x": {"y.z": 1}}}, "model.x.y.z:"),
        ({"opt": choice({"sgd": {"name": 1}})}, "opt.sgd.name:"),
        ({"opt": choice({"sgd": {"lr": grid([1, 2])}})}, "opt.sgd.lr:"),
        ({"model": {"uniform": [0, 1]}}, "model:"),
        ({"x": {1, 2}}, "x:"),
    ],
)
def test_python_api_errors_name_the_path(params: dict[str, Any], path: str) -> None:
    with pytest.raises(SpecError, match=f"^{path}"):
        Space(params)


def test_space_rejects_non_mapping() -> None:
    with pytest.raises(SpecError):
        Space([1, 2])  # type: ignore[arg-type]
    with pytest.raises(SpecError):
        Space.from_dict([1])  # type: ignore[arg-type]


def test_file_errors_name_the_file(tmp_path: Any) -> None:
    from sweeplab.space import load_space

    bad = tmp_path / "bad.yaml"
    bad.write_text("lr: {loguniform: [0, 1]}\n")
    with pytest.raises(SpecError, match=r"bad\.yaml: lr: `low > 0`"):
        load_space(bad)
    with pytest.raises(SpecError, match="must end in"):
        load_space(tmp_path / "space.toml")
    with pytest.raises(SpecError, match="cannot read"):
        load_space(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(SpecError, match="not valid JSON"):
        load_space(broken)
    broken_yaml = tmp_path / "broken.yml"
    broken_yaml.write_text("a: [")
    with pytest.raises(SpecError, match="not valid YAML"):
        load_space(broken_yaml)
