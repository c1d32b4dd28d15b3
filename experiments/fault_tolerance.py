"""Fault tolerance: checkpoint every N epochs, crash once, resume from `train.get_checkpoint()`.

The guide's workflow 4. `train_func` saves model, optimizer and epoch every `CHECKPOINT_EVERY`
epochs and, when started again, continues from `train.get_checkpoint()` instead of epoch 0.
With `INJECT_FAULT=1` each trial raises once, right after its first checkpoint, and
`max_failures=2` lets sweeplab retry it: a multi-worker trial's Train group restarts from its
latest checkpoint, a one-worker trial's Tune trial restarts from its latest Tune checkpoint.

The fault fires only in an attempt that started without a checkpoint, so it fires exactly once
per trial, and only a retry that really resumes gets past it: a retry that started from scratch
would crash again until `max_failures` is spent and the sweep would fail.

What to look for (in the results table, in `mlflow ui` under each trial's run, or in
`sweeplab-runs/fault_tolerance/run-*/tune/*/result.json`):

- every trial finishes with `epoch == FT_EPOCHS - 1` although each crashed once;
- the metric `resumed_from_epoch` is 0 before the crash and `CHECKPOINT_EVERY` after it (the
  first epoch of the retry), never 0 again: the retry did not repeat the saved epochs;
- `sweeplab-runs/fault_tolerance/run-*/ray.log` holds the `InjectedFault` and the retry; a
  one-worker trial's retry runs in a new Train folder `train/<trial>_1`, a multi-worker trial's
  restarted group stays in `train/<trial>_0`.

    INJECT_FAULT=1 sweeplab sweep experiments/fault_tolerance.py
    INJECT_FAULT=1 FT_WORKERS=2 CHECKPOINT_EVERY=3 FT_EPOCHS=12 sweeplab sweep \
        experiments/fault_tolerance.py --num-trials 4

Settings: `INJECT_FAULT=1` (crash once per trial; off by default), `CHECKPOINT_EVERY` (default 2),
`FT_EPOCHS` (default 6; the fault needs `FT_EPOCHS > CHECKPOINT_EVERY`), `FT_WORKERS` (workers per
trial, default 1), `--num-trials` (default 2).
"""

import os
import tempfile

import _data
import torch
import torch.nn as nn
from ray import train
from torch.utils.data import DataLoader

import sweeplab
from sweeplab import choice, loguniform

EPOCHS = _data.env_int("FT_EPOCHS", 6)
CHECKPOINT_EVERY = _data.env_int("CHECKPOINT_EVERY", 2)
INJECT_FAULT = os.environ.get("INJECT_FAULT", "0") == "1"
WORKERS = _data.env_int("FT_WORKERS", 1)


class InjectedFault(RuntimeError):
    """The crash this experiment injects on purpose."""


def train_func(config):
    torch.manual_seed(0)
    train_set, val_set = _data.digits()
    model = nn.Sequential(
        nn.Linear(64, config["hidden"]), nn.ReLU(), nn.Linear(config["hidden"], 10)
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=config["lr"])

    # Resume: a retry (or a resumed sweep) gets the latest reported checkpoint back.
    start_epoch = 0
    checkpoint = train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as folder:
            state = torch.load(os.path.join(folder, "model.pt"))
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start_epoch = state["epoch"] + 1

    model = train.torch.prepare_model(model)
    train_loader = train.torch.prepare_data_loader(
        DataLoader(train_set, batch_size=64, shuffle=True)
    )
    val_loader = train.torch.prepare_data_loader(DataLoader(val_set, batch_size=512))
    loss_fn = nn.CrossEntropyLoss()
    rank = train.get_context().get_world_rank()

    for epoch in range(start_epoch, EPOCHS):
        # The fault: once, in the first epoch after the first checkpoint, of a fresh start only.
        if INJECT_FAULT and start_epoch == 0 and epoch == CHECKPOINT_EVERY:
            raise InjectedFault(f"injected fault at epoch {epoch} (rank {rank}); retrying")

        model.train()
        for x, y in train_loader:
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

        model.eval()
        correct = total = 0
        with torch.no_grad():
            for x, y in val_loader:
                correct += (model(x).argmax(1) == y).sum().item()
                total += len(y)
        metrics = {
            "accuracy": correct / total,
            "epoch": epoch,
            "resumed_from_epoch": start_epoch,
        }

        # Checkpoint every CHECKPOINT_EVERY epochs (and after the last); report every epoch.
        if (epoch + 1) % CHECKPOINT_EVERY == 0 or epoch == EPOCHS - 1:
            with tempfile.TemporaryDirectory() as folder:
                checkpoint = None
                if rank == 0:
                    module = model.module if hasattr(model, "module") else model
                    torch.save(
                        {
                            "model": module.state_dict(),
                            "optimizer": optimizer.state_dict(),
                            "epoch": epoch,
                        },
                        os.path.join(folder, "model.pt"),
                    )
                    checkpoint = train.Checkpoint.from_directory(folder)
                train.report(metrics, checkpoint=checkpoint)
        else:
            train.report(metrics)


sweep = sweeplab.Sweep(
    name="fault_tolerance",
    train_func=train_func,
    space={"lr": loguniform(1e-3, 3e-2), "hidden": choice([32, 64])},
    metric="accuracy",
    mode="max",
    searcher="random",
    scheduler="fifo",  # every trial runs to the end, so the faults it meets are counted
    num_trials=2,
    max_iterations=EPOCHS,
    workers_per_trial=WORKERS,
    max_failures=2,
    checkpoints_to_keep=2,
    rank_by="last",
    seed=0,
)
