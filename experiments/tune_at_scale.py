"""Hyperparameter tuning at scale: ASHA + Optuna over `search_spaces/mlp.yaml` on `digits`.

Shows the guide's "Hyperparameter tuning with Ray Tune" workflow: Optuna's TPE proposes configs
(a `loguniform` learning rate, a `choice` of batch size and the MLP's shape), ASHA stops the weak
ones after a rung, and each trial reports once per epoch. A trial is a single worker (the fast
path: it runs in its Tune trial's process), so on a cluster as many trials run at once as there
are CPUs. The space comes from `search_spaces/mlp.yaml`; its `epochs` is replaced by
`TUNE_EPOCHS`.

    sweeplab preview experiments/tune_at_scale.py
    sweeplab sweep experiments/tune_at_scale.py                    # 6 trials here, 20 on >= 16 CPUs
    sweeplab sweep experiments/tune_at_scale.py --num-trials 100   # scale the search
    TUNE_EPOCHS=40 sweeplab sweep experiments/tune_at_scale.py --address HEAD:6379 --num-trials 200

Settings: `TUNE_EPOCHS` (epochs = ASHA's budget, default 20), `--num-trials` (default 20 on a
machine with at least 16 CPUs, else 6).
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

EPOCHS = _data.env_int("TUNE_EPOCHS", 20)
NUM_TRIALS = 20 if (os.cpu_count() or 1) >= 16 else 6
SPACES = Path(__file__).resolve().parent.parent / "search_spaces"

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "silu": nn.SiLU}


def build_mlp(model_config, inputs: int = 64, classes: int = 10) -> nn.Module:
    layers: list[nn.Module] = []
    width = inputs
    for _ in range(model_config["num_layers"]):
        layers.append(nn.Linear(width, model_config["hidden_size"]))
        if model_config["batch_norm"]:
            layers.append(nn.BatchNorm1d(model_config["hidden_size"]))
        layers += [ACTIVATIONS[model_config["activation"]](), nn.Dropout(model_config["dropout"])]
        width = model_config["hidden_size"]
    layers.append(nn.Linear(width, classes))
    return nn.Sequential(*layers)


def train_func(config):
    torch.manual_seed(0)
    train_set, val_set = _data.digits()
    model = build_mlp(config["model"])
    optimizer = torch.optim.Adam(model.parameters(), lr=config["lr"])

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
        DataLoader(train_set, batch_size=config["batch_size"], shuffle=True, drop_last=True)
    )
    val_loader = train.torch.prepare_data_loader(DataLoader(val_set, batch_size=512))
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(start_epoch, config["epochs"]):
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

        metrics = {"accuracy": correct / total, "val_loss": val_loss / total, "epoch": epoch}
        with tempfile.TemporaryDirectory() as folder:
            state = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
            torch.save({**state, "epoch": epoch}, os.path.join(folder, "state.pt"))
            train.report(metrics, checkpoint=train.Checkpoint.from_directory(folder))


space = sweeplab.load_space(SPACES / "mlp.yaml")

sweep = sweeplab.Sweep(
    name="tune_at_scale",
    train_func=train_func,
    space=sweeplab.Space({**space.params, "epochs": EPOCHS}),
    metric="accuracy",
    mode="max",
    searcher="optuna",
    scheduler="asha",
    num_trials=NUM_TRIALS,
    max_iterations=EPOCHS,
    workers_per_trial=1,
    checkpoints_to_keep=1,
    seed=0,
)
