"""Quickstart: tune an MLP on scikit-learn's `digits` (1,797 8x8 images, shipped offline).

Each trial is a 2-worker Ray Train group running plain PyTorch wrapped with `prepare_model` and
`prepare_data_loader`. The spec names no strategy, so the defaults run one: adaptive ASHA stops
weak trials early and Optuna's TPE proposes the next configs.

    sweeplab preview experiments/quickstart.py
    sweeplab sweep experiments/quickstart.py            # about 8 trials, a few minutes on 2 CPUs
    sweeplab sweep experiments/quickstart.py --num-trials 32   # scale up
"""

import os
import tempfile

import torch
import torch.nn as nn
from ray import train
from ray.train.torch import prepare_data_loader, prepare_model
from torch.utils.data import DataLoader, TensorDataset

import sweeplab
from sweeplab import choice, loguniform, uniform

EPOCHS = int(os.environ.get("QUICKSTART_EPOCHS", "8"))


def load_digits_split(seed: int = 0):
    """Digits as float tensors, 80/20 train/validation split, pixels scaled to [0, 1]."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x_train, x_val, y_train, y_val = train_test_split(
        x / 16.0, y, test_size=0.2, random_state=seed, stratify=y
    )

    def tensors(a, b):
        return TensorDataset(torch.tensor(a, dtype=torch.float32), torch.tensor(b))

    return tensors(x_train, y_train), tensors(x_val, y_val)


def train_func(config):
    torch.manual_seed(0)
    train_set, val_set = load_digits_split()
    model = nn.Sequential(
        nn.Linear(64, config["hidden"]),
        nn.ReLU(),
        nn.Dropout(config["dropout"]),
        nn.Linear(config["hidden"], 10),
    )
    if config["optimizer"]["name"] == "sgd":
        optimizer = torch.optim.SGD(
            model.parameters(), lr=config["lr"], momentum=config["optimizer"]["momentum"]
        )
    else:
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
    train_loader = prepare_data_loader(
        DataLoader(train_set, batch_size=config["batch_size"], shuffle=True)
    )
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
        val_loss = 0.0
        with torch.no_grad():
            for x, y in val_loader:
                logits = model(x)
                val_loss += loss_fn(logits, y).item() * len(y)
                correct += (logits.argmax(1) == y).sum().item()
                total += len(y)

        metrics = {"val_loss": val_loss / total, "accuracy": correct / total, "epoch": epoch}
        with tempfile.TemporaryDirectory() as folder:
            checkpoint = None
            if train.get_context().get_world_rank() == 0:
                state = {
                    "model": model.module.state_dict()
                    if hasattr(model, "module")
                    else model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "epoch": epoch,
                }
                torch.save(state, os.path.join(folder, "state.pt"))
                checkpoint = train.Checkpoint.from_directory(folder)
            train.report(metrics, checkpoint=checkpoint)


sweep = sweeplab.Sweep(
    name="quickstart",
    train_func=train_func,
    space={
        "lr": loguniform(1e-3, 3e-1),
        "hidden": choice([32, 64, 128]),
        "dropout": uniform(0.0, 0.3),
        "batch_size": choice([32, 64]),
        "optimizer": choice({"sgd": {"momentum": uniform(0.0, 0.95)}, "adam": {}}),
    },
    metric="accuracy",
    mode="max",
    # No searcher or scheduler: the defaults run the best measured strategy for one metric and
    # several reports a trial (optuna + adaptive-asha; `sweeplab preview` says so).
    num_trials=8,
    max_iterations=EPOCHS,
    workers_per_trial=2,
    checkpoints_to_keep=2,
    seed=0,
)
