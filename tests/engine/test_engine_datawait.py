"""The fraction of each epoch spent waiting for data: measured, reported, warned about."""

from __future__ import annotations

import contextlib
import importlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from toy_spec import progress_rows

from sweeplab.engine._datawait import METER, WaitMeter, install
from sweeplab.engine._display import LiveTable
from sweeplab.keys import DATA_WAIT_KEY
from sweeplab.raycompat import (
    install_train_fn_utils,
    route_train_calls_in_process,
    run_when_imported,
)


@contextlib.contextmanager
def train_calls_in_process() -> Iterator[None]:
    """`ray.train.*` served in this process, as in a one-worker trial (no Ray started), so
    that `prepare_data_loader` works here."""
    route_train_calls_in_process(
        experiment_name="datawait", restored=None, reporter=lambda metrics, checkpoint: None
    )
    try:
        yield
    finally:
        install_train_fn_utils(None)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_meter_fraction_of_the_window_since_the_first_fetch() -> None:
    clock = FakeClock()
    meter = WaitMeter(clock)
    assert meter.take() is None  # no data came: no metric
    clock.now = 5.0  # model set-up before the first epoch does not count
    meter.begin()
    meter.add(0.3)
    clock.now = 6.0
    meter.end()
    assert meter.take() == pytest.approx(0.3)
    assert meter.take() is None


def test_meter_window_goes_on_when_a_loop_reports_mid_epoch() -> None:
    clock = FakeClock()
    meter = WaitMeter(clock)
    meter.begin()
    meter.add(0.1)
    clock.now = 1.0
    assert meter.take() == pytest.approx(0.1)
    meter.add(0.5)  # the same iterator goes on after the report
    clock.now = 2.0
    assert meter.take() == pytest.approx(0.5)
    meter.reset()
    assert meter.take() is None


class SlowDataset:
    def __init__(self, delay: float) -> None:
        self.delay = delay

    def __len__(self) -> int:
        return 32

    def __getitem__(self, index: int) -> float:
        time.sleep(self.delay)
        return float(index)


def busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


# The second case's loader costs next to nothing, so what the meter counts as waiting is the
# fetches' own overhead plus any moment the OS takes the CPU away during one. With 20 ms of
# compute a batch (160 ms in all), one 35 ms preemption on a loaded 2-core machine went past
# 0.2 (0.216 seen); with 100 ms a batch such noise is a few percent of the window.
@pytest.mark.parametrize(
    ("delay", "compute", "low", "high"), [(0.01, 0.0, 0.8, 1.0), (0.0, 0.1, 0.0, 0.2)]
)
def test_prepared_loader_is_timed(delay: float, compute: float, low: float, high: float) -> None:
    """The loader `prepare_data_loader` returns, over a slow dataset."""
    import torch
    from ray.train.torch import prepare_data_loader
    from torch.utils.data import DataLoader

    install()
    install()  # idempotent: fetches are timed once
    METER.reset()
    with train_calls_in_process():
        loader = prepare_data_loader(DataLoader(SlowDataset(delay), batch_size=4))
        assert loader.device == torch.device("cpu")
        batches = 0
        for _ in loader:
            busy(compute)
            batches += 1
    assert batches == 8
    fraction = METER.take()
    assert fraction is not None
    assert low <= fraction <= high


LAZY_PROBE = """
import sys
from sweeplab.engine._datawait import METER, install
install()
print("torch" in sys.modules)
from torch.utils.data import DataLoader
from ray.train.torch import prepare_data_loader
from sweeplab.raycompat import route_train_calls_in_process
route_train_calls_in_process(experiment_name="probe", restored=None, reporter=lambda m, c: None)
METER.reset()
loader = prepare_data_loader(DataLoader(list(range(8)), batch_size=2))
print(sum(1 for _ in loader))
print(METER.take() is not None)
"""


def test_timing_loaders_imports_no_torch_until_the_trial_does() -> None:
    """A trial that never imports `ray.train.torch` pays nothing for the data-wait metric.

    A one-worker trial actor used to import torch (1.5 s of CPU) at its start, for this patch.
    """
    done = subprocess.run(
        [sys.executable, "-c", LAZY_PROBE], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["False", "4", "True"]


def test_run_when_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "late_pkg").mkdir()
    (tmp_path / "late_pkg" / "__init__.py").write_text("")
    (tmp_path / "late_pkg" / "mod.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[int] = []
    finders = len(sys.meta_path)
    run_when_imported("late_pkg.mod", lambda module: seen.append(module.VALUE))
    assert seen == []
    importlib.import_module("late_pkg.mod")
    assert seen == [1]
    assert len(sys.meta_path) == finders  # the hook stepped aside
    run_when_imported("late_pkg.mod", lambda module: seen.append(module.VALUE + 1))
    assert seen == [1, 2]  # already imported: at once
    for name in ("late_pkg.mod", "late_pkg"):
        monkeypatch.delitem(sys.modules, name)


def test_live_table_warns_when_data_dominates() -> None:
    table = LiveTable(metric="loss", mode="min", total_trials=3, max_iterations=2)
    for trial, waits in {"a": [0.9, 0.8], "b": [0.1, 0.2], "c": [0.7, 0.6]}.items():
        for step, wait in enumerate(waits, start=1):
            table.update(
                trial, {"training_iteration": step, "loss": 1.0, DATA_WAIT_KEY: wait}, "RUNNING"
            )
    warning = table.data_wait_warning()
    assert warning is not None
    assert "2 of 3 trials" in warning and "worst a: 85%" in warning
    quiet = LiveTable(metric="loss", mode="min", total_trials=1, max_iterations=1)
    quiet.update("b", {"training_iteration": 1, "loss": 1.0, DATA_WAIT_KEY: 0.3}, "RUNNING")
    assert quiet.data_wait_warning() is None


SPEC = """
import time

import torch
from torch.utils.data import DataLoader, Dataset

import ray.train
from ray.train.torch import prepare_data_loader

import sweeplab
from sweeplab import grid


class Slow(Dataset):
    def __init__(self, delay):
        self.delay = delay

    def __len__(self):
        return 16

    def __getitem__(self, index):
        time.sleep(self.delay)
        return torch.tensor([float(index)])


def train_func(config):
    # Bound at import, as the guide writes it: the timing must not depend on how it is called.
    # "slow": 20 ms to load each item and no compute; "fast": instant data, 80 ms of compute a
    # batch (an epoch long enough that one scheduling hiccup on a loaded machine, inside a
    # microsecond fetch, does not make up a large share of it).
    delay, compute = (0.02, 0.0) if config["case"] == "slow" else (0.0, 0.08)
    loader = prepare_data_loader(DataLoader(Slow(delay), batch_size=4))
    for epoch in range(3):
        for batch in loader:
            end = time.perf_counter() + compute
            while time.perf_counter() < end:
                pass
        ray.train.report({"loss": float(epoch), "slow": int(config["case"] == "slow")})


sweep = sweeplab.Sweep(
    name="datawait",
    train_func=train_func,
    space={"case": grid(["slow", "fast"])},
    metric="loss",
    mode="min",
    searcher="grid",
    num_trials=1,
    max_iterations=3,
    workers_per_trial=WORKERS,
    max_concurrent_trials=1,
)
"""


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_sweep_reports_data_wait_and_warns(ray_local: None, in_tmp: Path, workers: int) -> None:
    from sweeplab.engine import SweepOptions, run_sweep
    from sweeplab.spec import load_spec

    spec = in_tmp / "datawait.py"
    spec.write_text(SPEC.replace("WORKERS", str(workers)))
    outcome = run_sweep(
        load_spec(spec),
        SweepOptions(spec_path=spec, storage=in_tmp / "runs", live=False, track=False),
    )
    assert outcome.errored == 0
    rows = progress_rows(outcome)
    waits = {
        ("slow" if trial_rows[0]["slow"] else "fast"): [r[DATA_WAIT_KEY] for r in trial_rows]
        for trial_rows in rows.values()
    }
    assert sorted(waits) == ["fast", "slow"]
    assert all(len(fractions) == 3 for fractions in waits.values())
    # 16 items x 20 ms of loading and no compute: the epoch is nearly all waiting; the other
    # trial's loads are instant and its 4 batches x 80 ms of compute are nearly all the epoch.
    assert min(waits["slow"]) > 0.8
    assert max(waits["fast"]) < 0.3
    assert len(outcome.warnings) == 1
    assert "1 of 2 trials" in outcome.warnings[0]
    assert DATA_WAIT_KEY in outcome.warnings[0]
