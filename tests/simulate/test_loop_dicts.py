"""The loop's copies of Tune's result flattening and suggestion merging."""

from __future__ import annotations

from typing import Any

import pytest

from sweeplab.loop import flatten_result, merge_suggestion

CASES: list[dict[str, Any]] = [
    {},
    {"loss": 1.0, "training_iteration": 3},
    {"a": {"b": {"c": 1}, "d": 2}, "e": 3, "f": {"g": [1, {"h": 2}]}},
    {"config": {"lr": 0.1, "model": {"depth": 2}}, "loss": 0.5},
]


def test_flatten_result() -> None:
    result = {"a": {"b": {"c": 1}, "d": 2}, "e": 3}
    flat = flatten_result(result)
    assert flat == {"e": 3, "a/d": 2, "a/b/c": 1}
    assert list(flat) == ["e", "a/d", "a/b/c"], "nested keys follow, one level per pass"
    assert result == {"a": {"b": {"c": 1}, "d": 2}, "e": 3}, "the input was changed"


def test_merge_suggestion() -> None:
    base = {"lr": 0.1, "model": {"depth": 2, "width": 8}, "fixed": [1, 2]}
    merged = merge_suggestion(base, {"model": {"depth": 4}, "new": {"x": 1}, "fixed": [3]})
    assert merged == {"lr": 0.1, "model": {"depth": 4, "width": 8}, "fixed": [3], "new": {"x": 1}}
    assert base["model"] == {"depth": 2, "width": 8}, "the base was changed"
    merged["model"]["width"] = 0
    assert base["model"]["width"] == 8, "the merge shares the base's nested dicts"


@pytest.mark.parametrize("case", CASES)
def test_the_same_as_tunes_own(case: dict[str, Any]) -> None:
    """The same keys, values and key order as Ray 2.60's functions (while Ray has them)."""
    util = pytest.importorskip("ray.tune.utils.util")
    flat = flatten_result(case)
    assert list(flat.items()) == list(util.flatten_dict(case).items())
    suggestion = {"config": {"lr": 1.0}, "e": {"x": 1}}
    assert merge_suggestion(case, suggestion) == util.merge_dicts(case, suggestion)
