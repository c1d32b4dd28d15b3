"""Tune's save/restore of a scheduler's or searcher's whole state (imported with Ray)."""

from __future__ import annotations

import ray.cloudpickle as pickle

__all__ = ["PickledState"]


class PickledState:
    """``save``/``restore`` of every attribute, as Tune checkpoints a scheduler or a searcher
    for ``--resume`` (cloudpickle: a training function or a lambda in the state pickles too)."""

    def save(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "wb") as file:
            pickle.dump(self.__dict__, file)

    def restore(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "rb") as file:
            self.__dict__.update(pickle.load(file))
