from __future__ import annotations

import math

import pytest

from sweeplab.tracking import TrialRecord, rank_trials
from sweeplab.tracking._flatten import flatten, is_secret_key, mask_secrets, unflatten
from sweeplab.tracking._trials import result_metrics


def _rec(trial_id: str, best: float | None, last: float | None, best_it: int = 1, its: int = 5):
    return TrialRecord(
        trial_id=trial_id, best_value=best, last_value=last, best_iteration=best_it, iterations=its
    )


@pytest.mark.parametrize(
    ("mode", "rank_by", "records", "expected"),
    [
        ("min", "best", [_rec("a", 3, 3), _rec("b", 1, 4), _rec("c", 2, 2)], ["b", "c", "a"]),
        ("max", "best", [_rec("a", 3, 3), _rec("b", 1, 4), _rec("c", 2, 2)], ["a", "c", "b"]),
        ("min", "last", [_rec("a", 3, 3), _rec("b", 1, 4), _rec("c", 2, 2)], ["c", "a", "b"]),
        ("max", "last", [_rec("a", 3, 3), _rec("b", 1, 4), _rec("c", 2, 2)], ["b", "a", "c"]),
        # missing and NaN values rank last, ordered by trial id
        ("min", "best", [_rec("z", None, None), _rec("y", 5, 5), _rec("x", math.nan, 1)],
         ["y", "x", "z"]),
        ("max", "last", [_rec("b", 1, None), _rec("a", 1, None)], ["a", "b"]),
        # ties: earlier iteration first, then trial id
        ("min", "best", [_rec("b", 1, 1, best_it=2), _rec("a", 1, 1, best_it=3)], ["b", "a"]),
        ("min", "best", [_rec("b", 1, 1, best_it=2), _rec("a", 1, 1, best_it=2)], ["a", "b"]),
        ("max", "last", [_rec("b", 1, 1, its=4), _rec("a", 1, 1, its=8)], ["b", "a"]),
        ("min", "best", [], []),
    ],
)  # fmt: skip
def test_rank_trials(mode: str, rank_by: str, records: list[TrialRecord], expected: list[str]):
    ranked = rank_trials(records, "loss", mode, rank_by)
    assert [r.trial_id for r in ranked] == expected
    assert [r.rank for r in ranked] == list(range(1, len(expected) + 1))


@pytest.mark.parametrize(
    ("mode", "rank_by", "match"),
    [("minimum", "best", "`mode`"), ("min", "first", "`rank_by`")],
)
def test_rank_trials_rejects_bad_arguments(mode: str, rank_by: str, match: str):
    with pytest.raises(ValueError, match=match):
        rank_trials([], "loss", mode, rank_by)


@pytest.mark.parametrize(
    ("nested", "flat"),
    [
        ({"lr": 0.1}, {"lr": 0.1}),
        (
            {"optimizer": {"name": "sgd", "momentum": 0.9}, "bs": 32},
            {"optimizer.name": "sgd", "optimizer.momentum": 0.9, "bs": 32},
        ),
        ({"a": {"b": {"c": [1, 2]}}}, {"a.b.c": [1, 2]}),
        ({"empty": {}}, {"empty": {}}),
    ],
)
def test_flatten_round_trip(nested: dict, flat: dict):
    assert flatten(nested) == flat
    if nested != {"empty": {}}:
        assert unflatten(flat) == nested


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("api_token", True),
        ("db.PASSWORD", True),
        ("aws.secret_access_key", True),
        ("hf.ApiKey", True),
        ("my_private_key_path", True),
        ("credentials", True),
        ("lr", False),
        ("tokenizer.name", False),  # only the last segment counts
        ("secrets.count", False),
        ("access", False),
    ],
)
def test_is_secret_key(key: str, secret: bool):
    assert is_secret_key(key) is secret


def test_mask_secrets_is_nested_and_copies():
    config = {"lr": 0.1, "wandb": {"api_key": "abc", "project": "p"}, "token": "t"}
    assert mask_secrets(config) == {"lr": 0.1, "wandb": {"api_key": "***", "project": "p"},
                                    "token": "***"}  # fmt: skip
    assert config["wandb"]["api_key"] == "abc"


def test_result_metrics_keeps_user_numbers_and_time_total():
    result = {
        "loss": 0.5, "acc": 1, "flag": True, "note": "x", "nan": math.nan,
        "nested": {"a": 2.0}, "training_iteration": 3, "time_total_s": 1.5,
        "time_this_iter_s": 0.5, "timestamp": 123, "done": False, "trial_id": "t",
        "config": {"lr": 0.1}, "pid": 1, "checkpoint_path": "/x",
        "iterations_since_restore": 3, "time_since_restore": 1.0,
    }  # fmt: skip
    metrics = result_metrics(result)
    assert set(metrics) == {"loss", "acc", "nan", "nested/a", "time_total_s"}
    assert metrics["acc"] == 1.0 and isinstance(metrics["acc"], float)


def test_import_is_light():
    import subprocess
    import sys

    code = (
        "import sys, sweeplab.tracking as t; t.rank_trials; "
        "print(sorted(m for m in ('mlflow', 'ray', 'pandas') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
