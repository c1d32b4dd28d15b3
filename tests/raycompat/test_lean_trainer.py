"""The trainer a sweep starts leaves out Train's datasets callback only when it has no datasets."""

from __future__ import annotations

import ray.train
from ray.train.v2._internal.callbacks.datasets import DatasetsCallback

from sweeplab.raycompat import lean_torch_trainer


def _callbacks(**kwargs: object) -> list[object]:
    trainer = lean_torch_trainer()(
        lambda config: None, scaling_config=ray.train.ScalingConfig(num_workers=2), **kwargs
    )
    return trainer._create_default_callbacks()


def test_no_datasets_no_datasets_callback() -> None:
    callbacks = _callbacks()
    assert callbacks and not any(isinstance(c, DatasetsCallback) for c in callbacks)


def test_a_trainer_with_datasets_keeps_it() -> None:
    # Train takes a callable that makes the dataset, called only when the group starts.
    datasets = {"train": lambda: None}
    assert any(isinstance(c, DatasetsCallback) for c in _callbacks(datasets=datasets))
