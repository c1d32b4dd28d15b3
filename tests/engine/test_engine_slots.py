"""Warm trial slots on a real local Ray: one trainer group runs trial after trial."""

from __future__ import annotations

from pathlib import Path

import pytest
from toy_spec import progress_rows as results
from toy_spec import run_toy_sweep as sweep
from toy_spec import trial_errors

pytestmark = pytest.mark.slow


def _pids(rows: dict[str, list[dict]]) -> set[int]:
    return {int(r["worker_pid"]) for trial_rows in rows.values() for r in trial_rows}


def test_asha_stops_two_worker_trials_and_the_slot_runs_the_next(
    ray_local: None, in_tmp: Path
) -> None:
    """ASHA stops trials in the middle of a 2-worker run: both ranks leave at that report
    (none hangs in the next epoch) and the same group runs every other trial."""
    outcome = sweep(
        in_tmp,
        'name="slots-asha", space={"x": uniform(0, 1), "lr": loguniform(1e-3, 1)}, '
        'metric="loss", mode="min", scheduler="asha", num_trials=6, max_iterations=6, '
        "workers_per_trial=2, seed=1",
        epochs=6,
    )
    rows = results(outcome)
    assert len(rows) == 6 and outcome.errored == 0, trial_errors(outcome)
    assert min(len(r) for r in rows.values()) < 6, "ASHA stopped no trial"
    assert {r["sweeplab_workers"] for trial_rows in rows.values() for r in trial_rows} == {2}
    # One slot (2 CPUs, 2 workers): rank 0 of every trial ran in the same worker process.
    assert outcome.plan.concurrency == 1
    assert len(_pids(rows)) == 1
    for trial_rows in rows.values():  # each trial started from scratch, in its own folder
        assert [r["epoch"] for r in trial_rows] == list(range(len(trial_rows)))
    # Each trial's first run, in `trials/`.
    runs = outcome.storage_dir / "trials"
    folders = {p.name.rsplit("_", 1)[0] for p in runs.glob("*_0")}
    assert folders == set(rows)


def test_a_raising_trial_leaves_the_slot_serving(ray_local: None, in_tmp: Path) -> None:
    """The first trial's `train_func` raises (no retries): it fails, and the same group runs
    the next trial to the end."""
    outcome = sweep(
        in_tmp,
        f'name="slots-raise", space={{"x": grid([0.2, 0.4]), "fail_at": 1, '
        f'"marker_dir": "{in_tmp}"}}, metric="loss", mode="min", searcher="grid", '
        "num_trials=1, max_iterations=4, workers_per_trial=2, max_concurrent_trials=1",
        epochs=4,
    )
    assert (in_tmp / "failed-once").exists()
    assert outcome.trials == 2 and outcome.errored == 1
    rows = results(outcome)
    finished = [r for r in rows.values() if len(r) == 4]
    assert len(finished) == 1
    assert [r["epoch"] for r in finished[0]] == [0, 1, 2, 3]
    assert len(_pids(rows)) == 1, "the failed trial's slot did not serve the next trial"


DDP_SPEC = """
import torch
from torch import nn
import ray.train
import ray.train.torch

import sweeplab


def train_func(config):
    torch.manual_seed(config["seed"])
    xs = torch.randn(64, 4)
    ys = xs @ torch.tensor([1.0, -2.0, 0.5, 3.0]) + 0.1
    data = torch.utils.data.TensorDataset(xs, ys)
    loader = ray.train.torch.prepare_data_loader(
        torch.utils.data.DataLoader(data, batch_size=16, shuffle=False)
    )
    model = ray.train.torch.prepare_model(nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"])
    for epoch in range(3):
        total = 0.0
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x).squeeze(-1), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss)
        ray.train.report({"loss": total, "epoch": epoch, "lr": config["lr"]})


sweep = sweeplab.Sweep(
    name="ddp-REUSE",
    train_func=train_func,
    space={"lr": sweeplab.grid([0.01, 0.1]), "seed": 7},
    metric="loss",
    mode="min",
    searcher="grid",
    num_trials=1,
    max_iterations=3,
    workers_per_trial=2,
    reuse_groups=REUSE,
)
"""


def test_ddp_losses_are_the_same_with_and_without_reuse(ray_local: None, in_tmp: Path) -> None:
    """The Ray Train workflow (prepare_model: DDP over the reused process group,
    prepare_data_loader) gives the same losses on warm slots as in a group per trial.

    Two trials run one after the other on the slot; the second one, on the reused process
    group, runs again in a group of its own."""
    import ray

    from sweeplab.engine import SweepOptions, run_sweep
    from sweeplab.spec import load_spec

    losses = {}
    second_lr = None
    for reuse in (True, False):
        spec = in_tmp / f"ddp_{reuse}.py"
        source = DDP_SPEC.replace("REUSE", str(reuse))
        if not reuse:
            source = source.replace("sweeplab.grid([0.01, 0.1])", str(second_lr)).replace(
                'searcher="grid"', 'searcher="random"'
            )  # the one trial of that lr
        spec.write_text(source)
        groups_before = set(ray.util.placement_group_table())
        outcome = run_sweep(
            load_spec(spec),
            SweepOptions(spec_path=spec, storage=in_tmp / "runs", live=False, track=False),
        )
        assert outcome.errored == 0, trial_errors(outcome)
        # Every slot's group exited cleanly, its placement group removed: the warm slots' at
        # the sweep's end, each run's own slot's when its run left.
        table = ray.util.placement_group_table()
        left = {pg: table[pg]["state"] for pg in set(table) - groups_before}
        assert set(left.values()) <= {"REMOVED"}, left
        by_trial = results(outcome)
        losses[reuse] = {rows[0]["lr"]: [r["loss"] for r in rows] for rows in by_trial.values()}
        if reuse:  # the trial loop numbers its trials in the order it makes them
            second_lr = by_trial[max(by_trial)][0]["lr"]
    assert sorted(losses[True]) == [0.01, 0.1]
    assert list(losses[False]) == [second_lr]
    assert losses[True][second_lr] == pytest.approx(losses[False][second_lr], rel=1e-5)
