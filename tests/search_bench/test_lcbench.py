"""The LCBench surrogate's reader against the data's README: reference values, clock, batching."""

from __future__ import annotations

import json
import pickle
from typing import Any

import numpy as np
import pytest

from benchmarks.search.lcbench import (
    DATA,
    DEV_TASKS,
    EPOCHS,
    HELD_OUT_TASKS,
    OUTPUTS,
    PARAMS,
    SPACE,
    TASKS,
    LCBench,
)
from sweeplab import Space

A = {
    "batch_size": 64,
    "learning_rate": 0.01,
    "max_dropout": 0.2,
    "max_units": 256,
    "momentum": 0.9,
    "num_layers": 3,
    "weight_decay": 0.001,
}
B = {
    "batch_size": 512,
    "learning_rate": 0.0001,
    "max_dropout": 0.8,
    "max_units": 64,
    "momentum": 0.1,
    "num_layers": 1,
    "weight_decay": 0.05,
}
CONFIGS = {"A": A, "B": B}

# benchmarks/data/lcbench/README.md's table, computed with yahpo-gym itself. Its values are
# rounded to 4 decimals (val_accuracy, percent) and 3 (time, s); float32 adds ~1e-5 at 100, so
# the tolerance is the table's own precision: 1e-4 and 1e-3.
REFERENCE = [
    (126029, "A", 1, 44.9554, 5.702),
    (126029, "A", 52, 86.1668, 99.539),
    (126029, "B", 1, 62.8721, 1.587),
    (126029, "B", 52, 70.8795, 47.844),
    (167152, "A", 1, 5.7325, 10.468),
    (167152, "A", 52, 97.5330, 112.213),
    (167152, "B", 1, 2.4341, 1.502),
    (167152, "B", 52, 3.7324, 108.5),
]


@pytest.mark.parametrize(("task", "name", "epoch", "accuracy", "seconds"), REFERENCE)
def test_the_reader_gives_the_readme_reference_values(
    task: int, name: str, epoch: int, accuracy: float, seconds: float
) -> None:
    bench = LCBench(task)
    raw = bench.evaluate([CONFIGS[name]], [epoch])
    assert raw["val_accuracy"][0] == pytest.approx(accuracy, abs=1e-4)
    assert raw["time"][0] == pytest.approx(seconds, abs=1e-3)
    point = bench.curve(CONFIGS[name])[epoch - 1]
    assert point["val_accuracy"] == raw["val_accuracy"][0]
    assert point["time"] == pytest.approx(seconds, abs=1e-3)  # no dip before these epochs


def test_the_curves_cross_on_126029() -> None:
    bench = LCBench("126029")
    a, b = bench.curve(A), bench.curve(B)
    assert b[0]["val_accuracy"] > a[0]["val_accuracy"]  # B leads after one epoch
    assert a[-1]["val_accuracy"] > b[-1]["val_accuracy"] + 10  # A ends far ahead


def _sample(n: int, seed: int) -> list[dict[str, Any]]:
    return Space(SPACE).sample(seed=seed, n=n)


def test_the_clock_is_a_running_maximum_of_the_surrogate_time() -> None:
    bench = LCBench(146212)  # the development task whose raw time steps back most often
    dips = 0
    for config in _sample(20, seed=0):
        raw = bench.evaluate([config], range(1, EPOCHS + 1))["time"]
        clock = [point["time"] for point in bench.curve(config)]
        assert clock == np.maximum.accumulate(raw).tolist()
        dips += int(np.sum(np.diff(raw) < 0))
    assert dips > 0  # the maximum was needed: the raw time did step back


def test_batching_gives_the_values_of_single_calls() -> None:
    bench = LCBench(167104)
    configs = _sample(4, seed=1)
    pairs = [(config, epoch) for config in configs for epoch in range(1, EPOCHS + 1)]
    batch = bench.evaluate([c for c, _ in pairs], [e for _, e in pairs])
    single = [bench.evaluate([c], [e]) for c, e in pairs]
    for name in OUTPUTS:
        np.testing.assert_array_equal(batch[name], [s[name][0] for s in single])
    # point() evaluates a prefix at a time, curve() all 52: the same values either way
    fresh = LCBench(167104)
    for i, config in enumerate(configs):
        points = [fresh.point(config, epoch) for epoch in (3, 1, 20, 52, 9)]
        curve = bench.curve(config)
        assert points == [curve[epoch - 1] for epoch in (3, 1, 20, 52, 9)]
        accuracy = batch["val_accuracy"][i * EPOCHS : (i + 1) * EPOCHS]
        assert [point["val_accuracy"] for point in curve] == accuracy.tolist()


def test_one_config_serves_every_epoch_and_integers_are_rounded() -> None:
    bench = LCBench(126029)
    floats = {**A, "batch_size": 63.6, "max_units": 256.2, "num_layers": 3.0}
    np.testing.assert_array_equal(
        bench.evaluate([floats], [1, 52])["val_accuracy"],
        bench.evaluate([A, A], [1, 52])["val_accuracy"],
    )
    assert bench.curve(floats) == bench.curve(A)


def test_the_tasks_split_into_development_and_held_out() -> None:
    with open(DATA / "config_space.json") as file:
        space = json.load(file)
    (task_param,) = [p for p in space["hyperparameters"] if p["name"] == "OpenML_task_id"]
    with open(DATA / "encoding.json") as file:
        codes = json.load(file)["OpenML_task_id"]
    assert sorted(int(task) for task in task_param["choices"]) == list(TASKS)
    assert len(DEV_TASKS) == 10 and len(HELD_OUT_TASKS) == 24
    assert not set(DEV_TASKS) & set(HELD_OUT_TASKS)
    assert all(str(task) in codes for task in TASKS)


def test_the_space_has_the_surrogate_ranges() -> None:
    with open(DATA / "config_space.json") as file:
        ranges = {p["name"]: p for p in json.load(file)["hyperparameters"]}
    assert sorted(SPACE) == sorted(PARAMS)
    for name, param in SPACE.items():
        assert param.low == pytest.approx(ranges[name]["lower"])
        assert param.high == pytest.approx(ranges[name]["upper"])
        assert param.log == ranges[name]["log"]


def test_the_data_keeps_its_readme_and_license() -> None:
    for name in (
        "model.onnx",
        "config_space.json",
        "encoding.json",
        "README.md",
        "LICENSE-2.0.txt",
    ):
        assert (DATA / name).is_file()


def test_a_reader_pickles_without_its_cache() -> None:
    bench = LCBench(126029)
    bench.curve(A)
    copy = pickle.loads(pickle.dumps(bench))
    assert copy.task == 126029 and len(pickle.dumps(bench)) < 200
    assert copy.curve(A) == bench.curve(A)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: LCBench(1), "must be one of the LCBench tasks"),
        (lambda: LCBench("abc"), "must be one of the LCBench tasks"),
        (lambda: LCBench(126029).evaluate([A], [0]), r"epochs must be whole numbers in \[1, 52\]"),
        (lambda: LCBench(126029).evaluate([A], [53]), r"epochs must be whole numbers"),
        (
            lambda: LCBench(126029).evaluate([A], [1.5]),  # type: ignore[list-item]
            r"epochs must be whole numbers",
        ),
        (lambda: LCBench(126029).evaluate([A, B], [1, 2, 3]), "one config per epoch"),
        (lambda: LCBench(126029).evaluate([{**A, "momentum": 1.5}], [1]), "momentum <= 0.99"),
        (lambda: LCBench(126029).curve({**A, "batch_size": 8}), "16.0 <= batch_size"),
        (
            lambda: LCBench(126029).curve({k: v for k, v in A.items() if k != "num_layers"}),
            "'num_layers' is missing",
        ),
        (lambda: LCBench(126029).point(A, 0), r"`1 <= epoch <= 52` must hold"),
    ],
)
def test_bad_inputs_are_refused(call: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()
