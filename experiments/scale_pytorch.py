"""Scale existing PyTorch code: a small CNN on `digits`, two Ray Train workers per trial, ASHA.

The guide's workflow 1. `train_func` is an ordinary PyTorch loop (model, optimizer, DataLoader,
epochs); three calls make it distributed: `train.torch.prepare_model` wraps the model in
DistributedDataParallel, `train.torch.prepare_data_loader` gives each worker its shard of the data
(a DistributedSampler), and `train.report` hands each epoch's metrics and checkpoint to Ray. Each
trial is a group of `SCALE_WORKERS` workers (data-parallel over the 8x8 images seen as 1x8x8);
ASHA stops the weak trials after a rung.

    sweeplab preview experiments/scale_pytorch.py
    sweeplab sweep experiments/scale_pytorch.py                       # 4 trials x 2 workers
    SCALE_WORKERS=8 SCALE_EPOCHS=30 sweeplab sweep experiments/scale_pytorch.py --num-trials 16
    SCALE_WORKERS=4 SCALE_USE_GPU=1 sweeplab sweep experiments/scale_pytorch.py --address HEAD:6379

Settings: `SCALE_EPOCHS` (default 8), `SCALE_WORKERS` (workers per trial, default 2),
`SCALE_CPUS_PER_WORKER` (default 1; 0.5 fits a 2-worker trial beside another on 2 CPUs),
`SCALE_USE_GPU=1` (one GPU per worker), `--num-trials` (default 4).
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

EPOCHS = _data.env_int("SCALE_EPOCHS", 8)
WORKERS = _data.env_int("SCALE_WORKERS", 2)
CPUS_PER_WORKER = _data.env_float("SCALE_CPUS_PER_WORKER", 1.0)
USE_GPU = os.environ.get("SCALE_USE_GPU", "") == "1"


class DigitsCNN(nn.Module):
    """Two 3x3 convolutions and a linear head: 1x8x8 -> 10 classes."""

    def __init__(self, channels: int, dropout: float) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, channels, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(channels, 2 * channels, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),  # 8x8 -> 4x4
        )
        self.head = nn.Sequential(
            nn.Flatten(), nn.Dropout(dropout), nn.Linear(2 * channels * 16, 10)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


def train_func(config):
    torch.manual_seed(0)
    train_set, val_set = _data.digits(image=True)
    model = DigitsCNN(config["channels"], config["dropout"])
    optimizer = torch.optim.Adam(model.parameters(), lr=config["lr"])

    # Ray Train: DDP-wrap the model and shard the data over the workers (and move to the GPU).
    model = train.torch.prepare_model(model)
    train_loader = train.torch.prepare_data_loader(
        DataLoader(train_set, batch_size=config["batch_size"], shuffle=True)
    )
    val_loader = train.torch.prepare_data_loader(DataLoader(val_set, batch_size=256))
    loss_fn = nn.CrossEntropyLoss()
    world_size = train.get_context().get_world_size()

    for epoch in range(EPOCHS):
        if world_size > 1:
            train_loader.sampler.set_epoch(epoch)  # a different shuffle each epoch
        model.train()
        for x, y in train_loader:
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

        # Each worker scores its shard of the validation set; the counts are summed over workers.
        model.eval()
        totals = torch.zeros(3)  # correct, seen, summed loss
        with torch.no_grad():
            for x, y in val_loader:
                logits = model(x)
                totals += torch.tensor(
                    [
                        (logits.argmax(1) == y).sum().item(),
                        len(y),
                        loss_fn(logits, y).item() * len(y),
                    ]
                )
        if world_size > 1:
            torch.distributed.all_reduce(totals)
        correct, seen, summed_loss = totals.tolist()
        metrics = {"accuracy": correct / seen, "val_loss": summed_loss / seen, "epoch": epoch}

        with tempfile.TemporaryDirectory() as folder:
            checkpoint = None
            if train.get_context().get_world_rank() == 0:
                module = model.module if hasattr(model, "module") else model
                torch.save(module.state_dict(), os.path.join(folder, "model.pt"))
                checkpoint = train.Checkpoint.from_directory(folder)
            train.report(metrics, checkpoint=checkpoint)


sweep = sweeplab.Sweep(
    name="scale_pytorch",
    train_func=train_func,
    space={
        "lr": loguniform(3e-4, 3e-2),
        "channels": choice([8, 16, 32]),
        "dropout": uniform(0.0, 0.3),
        "batch_size": choice([32, 64]),
    },
    metric="accuracy",
    mode="max",
    searcher="random",
    scheduler="asha",
    num_trials=4,
    max_iterations=EPOCHS,
    workers_per_trial=WORKERS,
    cpus_per_worker=CPUS_PER_WORKER,
    use_gpu=USE_GPU,
    checkpoints_to_keep=1,
    seed=0,
)
