"""A conditional search space through HyperOpt: which optimizer, then only its own settings.

The space is `search_spaces/optimizers.yaml`: a learning rate, a weight decay and
`optimizer: choice({sgd: {momentum, nesterov}, adam: {beta1, beta2, eps}, adamw: {...}})`. A
conditional choice samples one branch and only that branch's values, so a trial's config holds,
e.g., `{"name": "sgd", "momentum": 0.42, "nesterov": True}` and never an unused `beta1`. HyperOpt's
TPE models each branch separately (the space compiles to `hp.choice` over the branches). The
model is an MLP on scikit-learn's breast-cancer table; the MLP's width is searched too.

    sweeplab preview experiments/hyperopt_conditional.py      # shows the space and sample configs
    sweeplab sweep experiments/hyperopt_conditional.py        # 8 trials
    HYPEROPT_EPOCHS=30 sweeplab sweep experiments/hyperopt_conditional.py --num-trials 64

Settings: `HYPEROPT_EPOCHS` (default 10), `--num-trials` (default 8).
"""

import os
import tempfile
from pathlib import Path

import _data
import torch
import torch.nn as nn
from ray import train
from torch.utils.data import DataLoader

import sweeplab
from sweeplab import choice

EPOCHS = _data.env_int("HYPEROPT_EPOCHS", 10)
SPACES = Path(__file__).resolve().parent.parent / "search_spaces"


def make_optimizer(params, config):
    """The optimizer of `config["optimizer"]["name"]` with that branch's own settings."""
    opt = config["optimizer"]
    common = {"lr": config["lr"], "weight_decay": config["weight_decay"]}
    if opt["name"] == "sgd":
        return torch.optim.SGD(params, momentum=opt["momentum"], nesterov=opt["nesterov"], **common)
    betas = (opt["beta1"], opt["beta2"])
    optimizer_class = torch.optim.Adam if opt["name"] == "adam" else torch.optim.AdamW
    return optimizer_class(params, betas=betas, eps=opt["eps"], **common)


def train_func(config):
    torch.manual_seed(0)
    train_set, val_set = _data.breast_cancer()
    model = nn.Sequential(
        nn.Linear(30, config["hidden"]), nn.ReLU(), nn.Linear(config["hidden"], 2)
    )
    optimizer = make_optimizer(model.parameters(), config)

    start_epoch = 0
    checkpoint = train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as folder:
            state = torch.load(os.path.join(folder, "state.pt"))
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start_epoch = state["epoch"] + 1

    model = train.torch.prepare_model(model)
    train_loader = train.torch.prepare_data_loader(
        DataLoader(train_set, batch_size=32, shuffle=True)
    )
    val_loader = train.torch.prepare_data_loader(DataLoader(val_set, batch_size=512))
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(start_epoch, EPOCHS):
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
        with tempfile.TemporaryDirectory() as folder:
            state = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
            torch.save({**state, "epoch": epoch}, os.path.join(folder, "state.pt"))
            train.report(
                {"accuracy": correct / total, "epoch": epoch},
                checkpoint=train.Checkpoint.from_directory(folder),
            )


optimizers = sweeplab.load_space(SPACES / "optimizers.yaml")

sweep = sweeplab.Sweep(
    name="hyperopt_conditional",
    train_func=train_func,
    space=sweeplab.Space({**optimizers.params, "hidden": choice([16, 32, 64])}),
    metric="accuracy",
    mode="max",
    searcher="hyperopt",
    scheduler="fifo",
    num_trials=8,
    max_iterations=EPOCHS,
    workers_per_trial=1,
    checkpoints_to_keep=1,
    seed=0,
)
