"""Multi-node trials: each trial's workers spread over the cluster's nodes (`SPREAD`).

The guide's workflow 5, inside a sweep. Each trial is a group of `MULTINODE_WORKERS` data-parallel
workers placed with `placement_strategy="SPREAD"` (one per node where possible). Every worker
looks up its node (`ray.get_runtime_context().get_node_id()`), the ids are gathered to rank 0 with
`torch.distributed.all_gather_object` over the group's process group, and rank 0 reports
`num_nodes` (distinct nodes of the group) and `node_ids` (comma-separated, in rank order) with
each epoch, and writes `placement.json` into its checkpoint.

Start a cluster (the same Python environment and sweeplab on every machine):

    ray start --head --port=6379                                   # on the head node
    ray start --address=HEAD_IP:6379                               # on each other node
    ray start --address=HEAD_IP:6379 --resources='{"trainer": 4}'  # optional: tag trainer nodes
    ray status                                                     # all nodes there?

and run the sweep from the head node (the spec's folder ships to the nodes):

    sweeplab sweep experiments/multi_node.py --address HEAD_IP:6379
    MULTINODE_WORKERS=4 SWEEPLAB_NODE_RESOURCE=trainer \
        sweeplab sweep experiments/multi_node.py --address HEAD_IP:6379 --num-trials 8

`num_nodes` in the results table / MLflow shows the spread: with one worker per node it equals
`MULTINODE_WORKERS`. With no cluster the same spec runs on this machine (SPREAD is a preference:
both workers land on the one node, `num_nodes == 1`):

    sweeplab sweep experiments/multi_node.py

Settings: `MULTINODE_WORKERS` (default 2), `SWEEPLAB_NODE_RESOURCE` (a custom resource each worker
needs, `NAME` or `NAME:AMOUNT`, e.g. `trainer` for nodes started with `--resources`; none by
default), `MULTINODE_CPUS_PER_WORKER` (default 1), `MULTINODE_EPOCHS` (default 6),
`--num-trials` (default 2).
"""

import json
import os
import socket
import tempfile

import _data
import ray
import torch
import torch.nn as nn
from ray import train
from torch.utils.data import DataLoader

import sweeplab
from sweeplab import choice, loguniform

EPOCHS = _data.env_int("MULTINODE_EPOCHS", 6)
WORKERS = _data.env_int("MULTINODE_WORKERS", 2)
CPUS_PER_WORKER = _data.env_float("MULTINODE_CPUS_PER_WORKER", 1.0)


def node_resources() -> dict[str, float]:
    """`SWEEPLAB_NODE_RESOURCE=NAME[:AMOUNT]` -> `{NAME: AMOUNT}` (AMOUNT 1 by default)."""
    value = os.environ.get("SWEEPLAB_NODE_RESOURCE", "").strip()
    if not value:
        return {}
    name, _, amount = value.partition(":")
    return {name.strip(): float(amount) if amount else 1.0}


def gather_placement() -> list[tuple[str, str]]:
    """Every worker's (Ray node id, host name), in rank order (all workers must call it)."""
    mine = (ray.get_runtime_context().get_node_id(), socket.gethostname())
    world_size = train.get_context().get_world_size()
    if world_size == 1:
        return [mine]
    everyone: list = [None] * world_size
    torch.distributed.all_gather_object(everyone, mine)
    return everyone


def train_func(config):
    torch.manual_seed(0)
    workers = gather_placement()
    node_ids = [node_id for node_id, _ in workers]
    placement = {
        "num_nodes": len(set(node_ids)),
        "workers": [{"rank": r, "node_id": n, "host": h} for r, (n, h) in enumerate(workers)],
    }

    train_set, val_set = _data.digits()
    model = nn.Sequential(
        nn.Linear(64, config["hidden"]), nn.ReLU(), nn.Linear(config["hidden"], 10)
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=config["lr"])
    model = train.torch.prepare_model(model)
    train_loader = train.torch.prepare_data_loader(
        DataLoader(train_set, batch_size=64, shuffle=True)
    )
    val_loader = train.torch.prepare_data_loader(DataLoader(val_set, batch_size=512))
    loss_fn = nn.CrossEntropyLoss()
    world_size = train.get_context().get_world_size()
    rank = train.get_context().get_world_rank()

    for epoch in range(EPOCHS):
        if world_size > 1:
            train_loader.sampler.set_epoch(epoch)
        model.train()
        for x, y in train_loader:
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

        model.eval()
        counts = torch.zeros(2)  # correct, seen: summed over the workers' validation shards
        with torch.no_grad():
            for x, y in val_loader:
                counts += torch.tensor([(model(x).argmax(1) == y).sum().item(), len(y)])
        if world_size > 1:
            torch.distributed.all_reduce(counts)
        metrics = {
            "accuracy": (counts[0] / counts[1]).item(),
            "epoch": epoch,
            "num_nodes": placement["num_nodes"],
            "node_ids": ",".join(node_ids),
        }
        with tempfile.TemporaryDirectory() as folder:
            checkpoint = None
            if rank == 0:
                module = model.module if hasattr(model, "module") else model
                torch.save(module.state_dict(), os.path.join(folder, "model.pt"))
                with open(os.path.join(folder, "placement.json"), "w") as out:
                    json.dump(placement, out, indent=2)
                checkpoint = train.Checkpoint.from_directory(folder)
            train.report(metrics, checkpoint=checkpoint)


sweep = sweeplab.Sweep(
    name="multi_node",
    train_func=train_func,
    space={"lr": loguniform(1e-3, 3e-2), "hidden": choice([64, 128])},
    metric="accuracy",
    mode="max",
    searcher="random",
    scheduler="fifo",  # every trial runs to the end, so the faults it meets are counted
    num_trials=2,
    max_iterations=EPOCHS,
    workers_per_trial=WORKERS,
    cpus_per_worker=CPUS_PER_WORKER,
    resources_per_worker=node_resources(),
    placement_strategy="SPREAD",
    checkpoints_to_keep=1,
    seed=0,
)
