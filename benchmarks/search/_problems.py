"""The benchmark's problems: objectives with learning curves, one report per iteration.

Each problem's training function is a small picklable callable of this module (the benchmark's
Ray workers import it: the repository root is on their ``PYTHONPATH``). Every report carries

- ``loss``: what the searcher and the scheduler see (noisy where the problem is noisy);
- ``score``: the noise-free value of the objective at this iteration, what the benchmark scores
  (for digits, the measured validation loss itself);
- ``wall``: ``time.time()`` at the report, to put every trial's reports in one time order.

Lower is better everywhere.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sweeplab import choice, loguniform, uniform

__all__ = [
    "H3_ARGMIN",
    "H3_MIN",
    "H6_ARGMIN",
    "H6_MIN",
    "PROBLEMS",
    "BudgetCap",
    "Problem",
    "hartmann",
    "simulate_curve",
    "simulator_step",
]

# Hartmann functions, as published (Dixon & Szego 1978; constants and optima as tabulated by
# Surjanovic & Bingham's Virtual Library of Simulation Experiments). The multi-fidelity form is
# BOCA's (Kandasamy et al. 2017): alpha'(z) = alpha - 0.1 * (1 - z), z in [0, 1], z = 1 exact.
_ALPHA = (1.0, 1.2, 3.0, 3.2)
_A3 = ((3.0, 10.0, 30.0), (0.1, 10.0, 35.0), (3.0, 10.0, 30.0), (0.1, 10.0, 35.0))
_P3 = (
    (0.3689, 0.1170, 0.2673),
    (0.4699, 0.4387, 0.7470),
    (0.1091, 0.8732, 0.5547),
    (0.0381, 0.5743, 0.8828),
)
_A6 = (
    (10.0, 3.0, 17.0, 3.5, 1.7, 8.0),
    (0.05, 10.0, 17.0, 0.1, 8.0, 14.0),
    (3.0, 3.5, 1.7, 10.0, 17.0, 8.0),
    (17.0, 8.0, 0.05, 10.0, 0.1, 14.0),
)
_P6 = (
    (0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886),
    (0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991),
    (0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650),
    (0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381),
)
H3_MIN = -3.86278
H3_ARGMIN = (0.114614, 0.555649, 0.852547)
H6_MIN = -3.32237
H6_ARGMIN = (0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573)


def hartmann(x: Sequence[float], fidelity: float = 1.0) -> float:
    """The Hartmann function of ``len(x)`` (3 or 6) variables in [0, 1], at a fidelity in [0, 1].

    ``f(x, z) = -sum_i (alpha_i - 0.1 * (1 - z)) * exp(-sum_j A_ij * (x_j - P_ij) ** 2)``; at
    ``z = 1`` the published function, below it uniformly worse (higher).
    """
    a: Sequence[Sequence[float]]
    p: Sequence[Sequence[float]]
    if len(x) == 3:
        a, p = _A3, _P3
    elif len(x) == 6:
        a, p = _A6, _P6
    else:
        raise ValueError(f"Hartmann is defined for 3 or 6 variables, but got {len(x)=}.")
    if not 0.0 <= fidelity <= 1.0:
        raise ValueError(f"`0 <= fidelity <= 1` must hold, but got {fidelity=}.")
    total = 0.0
    for alpha, a_row, p_row in zip(_ALPHA, a, p, strict=True):
        exponent = sum(aij * (xj - pij) ** 2 for aij, xj, pij in zip(a_row, x, p_row, strict=True))
        total += (alpha - 0.1 * (1.0 - fidelity)) * math.exp(-exponent)
    return -total


# The learning-curve simulator. A trial's state is its noise-free loss L, one step per
# iteration: L <- floor + (L - floor) * (1 - speed). A large `lr` is fast but has a high floor
# (SGD's noise floor); a wide model is slow but has a low floor. So fast starters lead early
# and slow starters end best: curves cross, and a first-rung ranking misleads. The floor
# follows the current `lr`, so a decaying `lr` (what PBT can learn) beats every constant one.
SIM_START = 1.0
_ACTIVATION_PENALTY = {"relu": 0.0, "tanh": 0.03, "sigmoid": 0.08}


def simulator_step(loss: float, config: Mapping[str, Any]) -> float:
    """One iteration of the simulator from noise-free loss ``loss`` under ``config``."""
    lr, width, reg = config["lr"], config["width"], config["reg"]
    speed = 1.0 - math.exp(-4.0 * lr / (1.0 + 1.5 * width))
    floor = (
        0.05
        + 0.4 * lr
        + 0.25 * (1.0 - width) ** 2
        + 0.3 * (reg - 0.3) ** 2
        + _ACTIVATION_PENALTY[config["activation"]]
    )
    return floor + (loss - floor) * (1.0 - speed)


def simulate_curve(config: Mapping[str, Any], iterations: int) -> list[float]:
    """The noise-free curve of a constant ``config``: the loss after each of ``iterations``."""
    curve, loss = [], SIM_START
    for _ in range(iterations):
        loss = simulator_step(loss, config)
        curve.append(loss)
    return curve


def _noise(config: Mapping[str, Any], iteration: int, sigma: float) -> float:
    """Gaussian noise drawn from the config and iteration: the same trial reads the same."""
    if sigma <= 0:
        return 0.0
    key = json.dumps(config, sort_keys=True, default=str) + f"#{iteration}"
    return random.Random(key).gauss(0.0, sigma)


@dataclasses.dataclass(frozen=True)
class BudgetCap:
    """The sweep's budget in iterations, counted over its trials in a shared file.

    Once the sweep has spent ``limit`` iterations, a trial trains one more iteration (a trial
    without a single report would leave its searcher and scheduler without a result) and then
    ends, or with ``coast`` reports its remaining iterations without training: Tune's
    synchronous HyperBand leaves its paused trials paused for good when a trial of their
    bracket ends before ``max_iterations`` on its own (a sweep here hung that way). The
    benchmark cuts every curve at this budget, so the cap only saves the time of iterations
    that would not be scored.
    """

    path: str
    limit: int
    coast: bool = False

    def take(self) -> bool:
        """Counts one iteration; whether it was within the budget."""
        import fcntl

        with open(self.path, "a+") as file:
            fcntl.flock(file, fcntl.LOCK_EX)
            file.seek(0)
            spent = int(file.read() or 0)
            file.seek(0)
            file.truncate()
            file.write(str(spent + 1))
        return spent < self.limit


def _step(cap: BudgetCap | None, first: bool) -> str:
    """What a trial does next: ``train``, ``coast`` (report without training) or ``end``."""
    if cap is None or cap.take() or first:
        return "train"
    return "coast" if cap.coast else "end"


def _restore_state() -> dict[str, Any] | None:
    from ray import train

    checkpoint = train.get_checkpoint()
    if checkpoint is None:
        return None
    with checkpoint.as_directory() as folder, open(os.path.join(folder, "state.json")) as file:
        state: dict[str, Any] = json.load(file)
    return state


def _report(metrics: dict[str, Any], state: dict[str, Any] | None) -> None:
    """Reports one iteration; with ``state``, with a checkpoint (HyperBand pauses, PBT copies)."""
    from ray import train

    metrics["wall"] = time.time()
    if state is None:
        train.report(metrics)
        return
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "state.json"), "w") as file:
            json.dump(state, file)
        train.report(metrics, checkpoint=train.Checkpoint.from_directory(folder))


@dataclasses.dataclass(frozen=True)
class HartmannTrain:
    """Iteration ``t`` of ``iterations`` evaluates Hartmann at fidelity ``t / iterations``."""

    dims: int
    iterations: int
    noise: float = 0.0
    checkpoint: bool = False
    cap: BudgetCap | None = None

    def __call__(self, config: dict[str, Any]) -> None:
        x = [config[f"x{i}"] for i in range(1, self.dims + 1)]
        state = _restore_state() or {"t": 0}
        start = state["t"] + 1
        for t in range(start, self.iterations + 1):
            if _step(self.cap, first=t == start) == "end":
                return
            value = hartmann(x, t / self.iterations)
            state = {"t": t}
            _report(
                {"loss": value + _noise(config, t, self.noise), "score": value},
                state if self.checkpoint else None,
            )


@dataclasses.dataclass(frozen=True)
class SimulatorTrain:
    """The learning-curve simulator; the state (iteration, loss) survives PBT's exploits."""

    iterations: int
    noise: float = 0.02
    checkpoint: bool = False
    cap: BudgetCap | None = None

    def __call__(self, config: dict[str, Any]) -> None:
        state = _restore_state() or {"t": 0, "loss": SIM_START}
        start = state["t"] + 1
        for t in range(start, self.iterations + 1):
            if _step(self.cap, first=t == start) == "end":
                return
            loss = simulator_step(state["loss"], config)
            state = {"t": t, "loss": loss}
            _report(
                {"loss": loss + _noise(config, t, self.noise), "score": loss, "lr": config["lr"]},
                state if self.checkpoint else None,
            )


@dataclasses.dataclass(frozen=True)
class DigitsTrain:
    """The quickstart's MLP on scikit-learn's digits; one epoch per iteration, SGD.

    The objective is the validation cross-entropy. On restore (PBT's exploit) the optimizer
    takes the config's ``lr`` and ``momentum``: the restored state holds the donor's.
    """

    iterations: int
    checkpoint: bool = False
    cap: BudgetCap | None = None

    def __call__(self, config: dict[str, Any]) -> None:
        import importlib

        import torch
        import torch.nn as nn
        from ray import train
        from torch.utils.data import DataLoader

        torch.set_num_threads(1)  # trials run side by side, one CPU each
        torch.manual_seed(0)
        train_set, val_set = importlib.import_module("experiments._data").digits()
        model = nn.Sequential(
            nn.Linear(64, config["hidden"]),
            nn.ReLU(),
            nn.Dropout(config["dropout"]),
            nn.Linear(config["hidden"], 10),
        )
        optimizer = torch.optim.SGD(
            model.parameters(), lr=config["lr"], momentum=config["momentum"]
        )
        start = 0
        checkpoint = train.get_checkpoint()
        if checkpoint:
            with checkpoint.as_directory() as folder:
                saved = torch.load(os.path.join(folder, "state.pt"))
            model.load_state_dict(saved["model"])
            optimizer.load_state_dict(saved["optimizer"])
            for group in optimizer.param_groups:
                group["lr"], group["momentum"] = config["lr"], config["momentum"]
            start = saved["epoch"] + 1
        loader = DataLoader(train_set, batch_size=config["batch_size"], shuffle=True)
        x_val, y_val = val_set.tensors
        loss_fn = nn.CrossEntropyLoss()
        for epoch in range(start, self.iterations):
            step = _step(self.cap, first=epoch == start)
            if step == "end":
                return
            model.train()
            for x, y in loader if step == "train" else ():
                optimizer.zero_grad()
                loss_fn(model(x), y).backward()
                optimizer.step()
            model.eval()
            with torch.no_grad():
                logits = model(x_val)
                val_loss = float(loss_fn(logits, y_val))
                accuracy = float((logits.argmax(1) == y_val).float().mean())
            if not math.isfinite(val_loss):
                val_loss = 10.0  # a diverged run: as bad as it gets, and still a number
            metrics = {"loss": val_loss, "score": val_loss, "accuracy": accuracy}
            metrics["wall"] = time.time()
            if not self.checkpoint:
                train.report(metrics)
                continue
            with tempfile.TemporaryDirectory() as folder:
                state = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
                torch.save({**state, "epoch": epoch}, os.path.join(folder, "state.pt"))
                train.report(metrics, checkpoint=train.Checkpoint.from_directory(folder))


@dataclasses.dataclass(frozen=True)
class Problem:
    """One benchmark problem: a space and a training function with one report per iteration.

    Attributes:
        name: Short name (``h3``, ``h6``, ``sim``, ``digits``).
        title: Name in tables and plots.
        space: The sweeplab search space.
        make_train: ``make_train(iterations, checkpoint, cap)`` builds the training function.
        iterations: Iterations of a full trial (R).
        trials: Random + FIFO's trials (N); its budget is N x R iterations.
        synthetic: Whether the ASHA variants run on it.
        pbt: Whether it has a schedule to learn (PBT runs on it).
        optimum: The known optimum of the objective, where there is one.
    """

    name: str
    title: str
    space: dict[str, Any]
    make_train: Callable[[int, bool, BudgetCap | None], Callable[[dict[str, Any]], None]]
    iterations: int
    trials: int
    synthetic: bool
    pbt: bool
    optimum: float | None = None


def _unit_cube(dims: int) -> dict[str, Any]:
    return {f"x{i}": uniform(0.0, 1.0) for i in range(1, dims + 1)}


SIM_SPACE: dict[str, Any] = {
    "lr": loguniform(1e-3, 1.0),
    "width": uniform(0.0, 1.0),
    "reg": uniform(0.0, 1.0),
    "activation": choice(["relu", "tanh", "sigmoid"]),
}
DIGITS_SPACE: dict[str, Any] = {
    "lr": loguniform(1e-3, 1.0),
    "momentum": uniform(0.0, 0.95),
    "hidden": choice([16, 32, 64, 128]),
    "dropout": uniform(0.0, 0.5),
    "batch_size": choice([16, 32, 64, 128]),
}

PROBLEMS: dict[str, Problem] = {
    "h3": Problem(
        name="h3",
        title="Hartmann 3 (multi-fidelity)",
        space=_unit_cube(3),
        make_train=lambda r, ckpt, cap: HartmannTrain(3, r, 0.01, ckpt, cap),
        iterations=27,
        trials=10,
        synthetic=True,
        pbt=False,
        optimum=H3_MIN,
    ),
    "h6": Problem(
        name="h6",
        title="Hartmann 6 (multi-fidelity)",
        space=_unit_cube(6),
        make_train=lambda r, ckpt, cap: HartmannTrain(6, r, 0.01, ckpt, cap),
        iterations=27,
        trials=10,
        synthetic=True,
        pbt=False,
        optimum=H6_MIN,
    ),
    "sim": Problem(
        name="sim",
        title="learning-curve simulator (crossing curves)",
        space=SIM_SPACE,
        make_train=lambda r, ckpt, cap: SimulatorTrain(r, 0.02, ckpt, cap),
        iterations=27,
        trials=10,
        synthetic=True,
        pbt=True,
    ),
    "digits": Problem(
        name="digits",
        title="digits MLP (real training)",
        space=DIGITS_SPACE,
        make_train=lambda r, ckpt, cap: DigitsTrain(r, ckpt, cap),
        iterations=27,
        trials=10,
        synthetic=False,
        # PBT could learn an lr schedule here too, but sweeplab restarts a trial actor at each
        # exploit (no actor reuse under PBT): ~150 s a sweep, a third of the benchmark's time.
        pbt=False,
    ),
}
