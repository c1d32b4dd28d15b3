"""Population Based Training: learning-rate and momentum schedules found while training.

A population of SGD-trained MLPs on `digits` trains side by side. Every few epochs (a quarter of
`PBT_EPOCHS`) PBT replaces the weakest quarter by copies of the strongest (weights, optimizer state
and epoch, from their checkpoints) with `lr` and `momentum` perturbed, so each surviving lineage
ends up following a schedule rather than a constant. The hidden layer's width is searched too,
but not mutated (`sweeplab.PBT(mutate=["lr", "momentum"])`): an exploited trial loads its
donor's weights, which fit the donor's width only. Two things make a `train_func` PBT-ready:

- a checkpoint every epoch holding model, optimizer and epoch (PBT can exploit at any report);
- on restore, `config["lr"]` and `config["momentum"]` are written into the optimizer's param
  groups: the restored optimizer state carries the donor's old values, but PBT's mutated config
  is the one to train with from here on.

PBT mutates configs itself, so the searcher is `random` (it draws the initial population).
Each trial reports the `lr` and `momentum` it trains with, so its schedule is a metric curve in
MLflow; the exploits are in the trial runs' tags `sweeplab.pbt.donor` and `sweeplab.pbt.lineage`
and in the metrics `config.lr` / `config.momentum` at each exploit's step (`mlflow ui`).

    sweeplab sweep experiments/pbt_schedules.py                      # population of 4
    PBT_EPOCHS=40 sweeplab sweep experiments/pbt_schedules.py --num-trials 16

Settings: `PBT_EPOCHS` (default 12), `PBT_WORKERS` (workers per trial, default 1),
`--num-trials` (population size, default 4).
"""

import os
import tempfile

import _data
import torch
import torch.nn as nn
from ray import train
from torch.utils.data import DataLoader

import sweeplab
from sweeplab import choice, loguniform, uniform

EPOCHS = _data.env_int("PBT_EPOCHS", 12)
WORKERS = _data.env_int("PBT_WORKERS", 1)


def train_func(config):
    torch.manual_seed(0)
    train_set, val_set = _data.digits()
    hidden = config["hidden"]  # the donor's after an exploit: PBT does not mutate it
    model = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"], momentum=config["momentum"])

    start_epoch = 0
    checkpoint = train.get_checkpoint()
    if checkpoint:  # a retry, or PBT's exploit: the donor's state with a mutated config
        with checkpoint.as_directory() as folder:
            state = torch.load(os.path.join(folder, "state.pt"))
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start_epoch = state["epoch"] + 1
        for group in optimizer.param_groups:  # the loaded state holds the donor's values
            group["lr"] = config["lr"]
            group["momentum"] = config["momentum"]

    model = train.torch.prepare_model(model)
    train_loader = train.torch.prepare_data_loader(
        DataLoader(train_set, batch_size=config["batch_size"], shuffle=True)
    )
    val_loader = train.torch.prepare_data_loader(DataLoader(val_set, batch_size=512))
    loss_fn = nn.CrossEntropyLoss()
    world_size = train.get_context().get_world_size()

    for epoch in range(start_epoch, EPOCHS):
        if world_size > 1:
            train_loader.sampler.set_epoch(epoch)
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
            "lr": optimizer.param_groups[0]["lr"],  # the schedule PBT found, epoch by epoch
            "momentum": optimizer.param_groups[0]["momentum"],
        }
        with tempfile.TemporaryDirectory() as folder:
            checkpoint = None
            if train.get_context().get_world_rank() == 0:
                module = model.module if hasattr(model, "module") else model
                state = {"model": module.state_dict(), "optimizer": optimizer.state_dict()}
                torch.save({**state, "epoch": epoch}, os.path.join(folder, "state.pt"))
                checkpoint = train.Checkpoint.from_directory(folder)
            train.report(metrics, checkpoint=checkpoint)


sweep = sweeplab.Sweep(
    name="pbt_schedules",
    train_func=train_func,
    space={
        "lr": loguniform(1e-3, 0.3),
        "momentum": uniform(0.0, 0.95),
        "hidden": choice([32, 64]),
        "batch_size": 32,
    },
    metric="accuracy",
    mode="max",
    searcher="random",
    scheduler=sweeplab.PBT(mutate=["lr", "momentum"]),
    num_trials=4,
    max_iterations=EPOCHS,
    workers_per_trial=WORKERS,
    checkpoints_to_keep=2,
    rank_by="last",
    seed=0,
)
