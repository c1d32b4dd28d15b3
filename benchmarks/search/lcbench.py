"""Real learning curves: YAHPO Gym's LCBench surrogate (``benchmarks/data/lcbench/``), read with
onnxruntime (the ``bench`` extra).

LCBench (Zimmer, Lindauer & Hutter 2021) trained Auto-PyTorch's funnel-shaped MLPs on 34 OpenML
tasks for 52 epochs; YAHPO Gym (Pfisterer et al. 2022) fitted one ONNX graph to those curves.
:class:`LCBench` evaluates it for one task::

    bench = LCBench(126029)
    bench.curve(config)[51]["val_accuracy"]  # percent, after epoch 52
    bench.point(config, 3)                   # epoch 3 alone: evaluates as few epochs as it can

``val_accuracy`` is in percent (as the surrogate gives it, and the data's README tabulates).
The surrogate's ``time`` (cumulative seconds) is not always monotone in the epoch; the curves
here take a running maximum of it, so it reads as a clock.

Only :data:`DEV_TASKS` are used while developing a searcher and for the figures; the
:data:`HELD_OUT_TASKS` confirm that a result generalises.
"""

from __future__ import annotations

import functools
import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sweeplab import loguniform, randint, uniform

__all__ = [
    "DATA",
    "DEV_TASKS",
    "EPOCHS",
    "HELD_OUT_TASKS",
    "OUTPUTS",
    "PARAMS",
    "SPACE",
    "TASKS",
    "LCBench",
]

DATA = Path(__file__).resolve().parents[1] / "data" / "lcbench"
EPOCHS = 52

DEV_TASKS = (126029, 146212, 167104, 167149, 167152, 167161, 167181, 168330, 168910, 189873)
HELD_OUT_TASKS = (
    3945,
    7593,
    34539,
    126025,
    126026,
    167168,
    167184,
    167185,
    167190,
    167200,
    167201,
    168329,
    168331,
    168335,
    168868,
    168908,
    189354,
    189862,
    189865,
    189866,
    189905,
    189906,
    189908,
    189909,
)
TASKS = tuple(sorted(DEV_TASKS + HELD_OUT_TASKS))

# The graph's ``x_cont`` columns, in the order it was fitted with (yahpo_gym's ``cont_names``
# for lcbench), NOT config_space.json's alphabetical order. ``epoch`` comes first; PARAMS are
# the other seven, the configuration.
_COLUMNS = (
    "epoch",
    "batch_size",
    "learning_rate",
    "momentum",
    "weight_decay",
    "num_layers",
    "max_units",
    "max_dropout",
)
PARAMS = _COLUMNS[1:]
_INTEGER_PARAMS = frozenset({"batch_size", "num_layers", "max_units"})
OUTPUTS = (
    "time",
    "val_accuracy",
    "val_cross_entropy",
    "val_balanced_accuracy",
    "test_cross_entropy",
    "test_balanced_accuracy",
)

# YAHPO's LCBench space: batch_size and max_units are log-scaled integers. The reader rounds them
# to int again before feeding the model, in case a searcher hands back a float.
SPACE: dict[str, Any] = {
    "batch_size": randint(16, 512, log=True),
    "learning_rate": loguniform(1e-4, 1e-1),
    "max_dropout": uniform(0.0, 1.0),
    "max_units": randint(64, 1024, log=True),
    "momentum": uniform(0.1, 0.99),
    "num_layers": randint(1, 5),
    "weight_decay": uniform(1e-5, 0.1),
}
_BOUNDS = {name: (float(param.low), float(param.high)) for name, param in SPACE.items()}

# The graph's float32 results depend on how many rows a call holds (its matrix kernels take a
# different path for a ragged tail): padded to a multiple of 8 rows, every row reads the same
# bits whatever the batch, so the values never depend on the order a benchmark asks in.
_ROW_BLOCK = 8
# point() evaluates a curve's epochs in these prefixes, not all 52 at once: most trials under
# ASHA stop within a few epochs, and a call costs about in proportion to its rows.
_PREFIX_ENDS = (8, 24, EPOCHS)
_CACHED_CURVES = 2**15  # ~1.3 kB each


@functools.cache
def _session() -> Any:
    """The ONNX session, loaded once per process; one thread (the benchmark runs side by side)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        str(DATA / "model.onnx"), options, providers=["CPUExecutionProvider"]
    )
    names = [node.name for node in session.get_inputs()]
    if names != ["x_cat", "x_cont"]:
        raise RuntimeError(f"the LCBench graph's inputs are {names}, not ['x_cat', 'x_cont'].")
    return session


@functools.cache
def _encoding() -> dict[str, int]:
    with open(DATA / "encoding.json") as file:
        codes: dict[str, int] = json.load(file)["OpenML_task_id"]
    return codes


def _row(config: Mapping[str, Any]) -> tuple[float, ...]:
    """The config's seven inputs in the graph's order, integers rounded; validated."""
    values = []
    for name in PARAMS:
        if name not in config:
            raise ValueError(f"an LCBench config needs {list(PARAMS)}, but {name!r} is missing.")
        value = float(config[name])
        if name in _INTEGER_PARAMS:
            value = float(round(value))
        low, high = _BOUNDS[name]
        if not low <= value <= high:
            raise ValueError(
                f"`{low} <= {name} <= {high}` must hold (the surrogate extrapolates silently "
                f"outside its data), but got {name}={config[name]!r}."
            )
        values.append(value)
    return tuple(values)


def _key(config: Mapping[str, Any]) -> tuple[float, ...]:
    """The cache key of a config: its inputs as the graph reads them, checked on a cache miss."""
    try:
        return tuple(
            float(round(config[name])) if name in _INTEGER_PARAMS else float(config[name])
            for name in PARAMS
        )
    except KeyError:
        return _row(config)  # raises, naming the missing parameter


class _Curve:
    """A config's curve, evaluated up to epoch ``len(accuracy)``; ``time`` is a running max."""

    __slots__ = ("accuracy", "cross_entropy", "row", "time")

    def __init__(self, row: tuple[float, ...]) -> None:
        self.row = row
        self.accuracy: list[float] = []
        self.cross_entropy: list[float] = []
        self.time: list[float] = []


class LCBench:
    """The LCBench surrogate on one OpenML task.

    Args:
        task: The OpenML task id, one of :data:`TASKS` (an int or its string).

    Raises:
        ValueError: If ``task`` is not one of the 34 LCBench tasks.
    """

    def __init__(self, task: int | str) -> None:
        try:
            number = int(task)
        except (TypeError, ValueError):
            number = -1
        if number not in TASKS:
            raise ValueError(f"`task` must be one of the LCBench tasks {TASKS}, but got {task!r}.")
        self.task = number
        self._curves: OrderedDict[tuple[float, ...], _Curve] = OrderedDict()

    def __repr__(self) -> str:
        return f"LCBench({self.task})"

    def __reduce__(self) -> tuple[type[LCBench], tuple[int]]:
        return (LCBench, (self.task,))  # pickled without its cache: that stays in its process

    def evaluate(
        self, configs: Sequence[Mapping[str, Any]], epochs: Sequence[int]
    ) -> dict[str, np.ndarray]:
        """The surrogate's raw outputs for ``configs[i]`` after epoch ``epochs[i]``, in one call.

        Args:
            configs: One config per epoch, or a single config for every epoch. A config maps
                each of :data:`PARAMS` to a value within :data:`SPACE`'s bounds.
            epochs: Epochs in ``[1, 52]`` (both inclusive).

        Returns:
            Each of :data:`OUTPUTS` -> a float64 array, one value per epoch. ``time`` is the
            surrogate's own cumulative time, not a running maximum (see :meth:`curve`).

        Raises:
            ValueError: If the lengths disagree, or an epoch or a value is out of range.
        """
        epoch_array = np.asarray(epochs, dtype=np.float64).reshape(-1)
        if len(configs) not in (1, len(epoch_array)):
            raise ValueError(
                f"pass one config, or one config per epoch, but got {len(configs)} configs "
                f"for {len(epoch_array)} epochs."
            )
        if len(epoch_array) and not (
            np.all(epoch_array == np.round(epoch_array))
            and epoch_array.min() >= 1
            and epoch_array.max() <= EPOCHS
        ):
            raise ValueError(f"epochs must be whole numbers in [1, {EPOCHS}], but got {epochs!r}.")
        rows = np.array([_row(config) for config in configs], dtype=np.float32)
        out = self._run(rows, epoch_array)
        return {name: out[:, i].astype(np.float64) for i, name in enumerate(OUTPUTS)}

    def curve(self, config: Mapping[str, Any]) -> list[dict[str, float]]:
        """The config's whole curve: for epochs 1 to 52, its validation metrics and clock.

        Returns:
            52 dicts of ``val_accuracy`` (percent), ``val_cross_entropy`` and ``time``: the
            cumulative seconds, a running maximum of the surrogate's time.
        """
        entry = self._extend(config, EPOCHS)
        return [
            {"val_accuracy": accuracy, "val_cross_entropy": cross_entropy, "time": seconds}
            for accuracy, cross_entropy, seconds in zip(
                entry.accuracy, entry.cross_entropy, entry.time, strict=True
            )
        ]

    def point(self, config: Mapping[str, Any], epoch: int) -> dict[str, float]:
        """``curve(config)[epoch - 1]``, evaluating only a prefix of the curve (cached)."""
        if not 1 <= epoch <= EPOCHS:
            raise ValueError(f"`1 <= epoch <= {EPOCHS}` must hold, but got {epoch=}.")
        entry = self._extend(config, epoch)
        i = epoch - 1
        return {
            "val_accuracy": entry.accuracy[i],
            "val_cross_entropy": entry.cross_entropy[i],
            "time": entry.time[i],
        }

    def _extend(self, config: Mapping[str, Any], epoch: int) -> _Curve:
        """The config's cached curve, evaluated at least up to ``epoch``."""
        key = _key(config)
        entry = self._curves.get(key)
        if entry is None:
            entry = _Curve(_row(config))
            self._curves[key] = entry
            if len(self._curves) > _CACHED_CURVES:
                self._curves.popitem(last=False)
        else:
            self._curves.move_to_end(key)
        done = len(entry.accuracy)
        if epoch <= done:
            return entry
        end = next(end for end in _PREFIX_ENDS if end >= epoch)
        epochs = np.arange(done + 1, end + 1, dtype=np.float64)
        out = self._run(np.array([entry.row], dtype=np.float32), epochs)
        clock = entry.time[-1] if entry.time else 0.0
        for seconds in out[:, 0].tolist():
            clock = max(clock, seconds)
            entry.time.append(clock)
        entry.accuracy.extend(out[:, 1].tolist())
        entry.cross_entropy.extend(out[:, 2].tolist())
        return entry

    def _run(self, rows: np.ndarray, epochs: np.ndarray) -> np.ndarray:
        """The graph on ``rows`` (one, or one per epoch) x ``epochs``; float32, (n, 6)."""
        n = len(epochs)
        if n == 0:
            return np.empty((0, len(OUTPUTS)), dtype=np.float32)
        padded = n + (-n % _ROW_BLOCK)
        x_cont = np.empty((padded, len(_COLUMNS)), dtype=np.float32)
        x_cont[:n, 0] = epochs
        x_cont[:n, 1:] = rows
        x_cont[n:] = x_cont[n - 1]
        x_cat = np.full((padded, 1), _encoding()[str(self.task)], dtype=np.int32)
        out: np.ndarray = _session().run(None, {"x_cat": x_cat, "x_cont": x_cont})[0]
        return out[:n]
