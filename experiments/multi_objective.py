"""Multi-objective: the quickstart's MLP on digits, accuracy against the model's size.

Each trial trains an MLP (one or two hidden layers) on scikit-learn's `digits` and reports its
validation accuracy and its parameter count in thousands (``params_k``), a cost the model
really has: it sets the memory and the compute of every prediction. The multi-objective ASHA
stops trials that are dominated at each rung; Optuna's multi-objective TPE proposes the next
configs; models above 50k parameters are infeasible. The sweep ends with a Pareto front, ranked
in MLflow, and picks the most accurate model under 10k parameters.

    sweeplab sweep experiments/multi_objective.py
    sweeplab best multi_objective                 # the front as a table
    sweeplab report multi_objective               # the Pareto front, drawn
"""

import os
import tempfile

import torch
import torch.nn as nn
from _data import digits, env_int
from ray import train
from ray.train.torch import prepare_data_loader, prepare_model
from torch.utils.data import DataLoader

import sweeplab
from sweeplab import choice, loguniform, uniform

EPOCHS = env_int("MO_EPOCHS", 8)
WORKERS = env_int("MO_WORKERS", 2)


def build_model(config):
    width = config["hidden"]
    layers = [nn.Linear(64, width), nn.ReLU(), nn.Dropout(config["dropout"])]
    if config["layers"] == 2:
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 10))


def train_func(config):
    torch.manual_seed(0)
    train_set, val_set = digits()
    model = build_model(config)
    params_k = sum(p.numel() for p in model.parameters()) / 1000.0
    optimizer = torch.optim.Adam(model.parameters(), lr=config["lr"])

    start_epoch = 0
    checkpoint = train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as folder:
            state = torch.load(os.path.join(folder, "state.pt"))
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start_epoch = state["epoch"] + 1

    model = prepare_model(model)
    train_loader = prepare_data_loader(DataLoader(train_set, batch_size=64, shuffle=True))
    val_loader = prepare_data_loader(DataLoader(val_set, batch_size=256))
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(start_epoch, EPOCHS):
        if train.get_context().get_world_size() > 1:
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

        metrics = {"accuracy": correct / total, "params_k": params_k, "epoch": epoch}
        with tempfile.TemporaryDirectory() as folder:
            checkpoint = None
            if train.get_context().get_world_rank() == 0:
                inner = model.module if hasattr(model, "module") else model
                state = {
                    "model": inner.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "epoch": epoch,
                }
                torch.save(state, os.path.join(folder, "state.pt"))
                checkpoint = train.Checkpoint.from_directory(folder)
            train.report(metrics, checkpoint=checkpoint)


sweep = sweeplab.Sweep(
    name="multi_objective",
    train_func=train_func,
    space={
        "lr": loguniform(1e-3, 3e-2),
        "hidden": choice([8, 16, 32, 64, 128, 256]),
        "layers": choice([1, 2]),
        "dropout": uniform(0.0, 0.3),
    },
    metric=["accuracy", "params_k"],
    mode=["max", "min"],
    constraints=["params_k <= 50"],
    pick="params_k <= 10, accuracy",
    searcher="optuna",
    scheduler="asha",
    num_trials=12,
    max_iterations=EPOCHS,
    workers_per_trial=WORKERS,
    checkpoints_to_keep=2,
    seed=0,
)
