"""The loaders `ray.train.torch.prepare_data_loader` returns, timed for the data-wait metric."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

from sweeplab.raycompat._uses import PrivateUse

PRIVATE_USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        "ray.train.torch.train_loop_utils",
        "_WrappedDataLoader._prefetch_next_batch",
        (),
        "the synchronous batch fetch of every prepared loader, timed for the data-wait metric; "
        "`prepare_data_loader` has no public hook",
    ),
    PrivateUse(
        "ray.train.torch.train_loop_utils",
        "_WrappedDataLoader.__iter__",
        (),
        "the start of an epoch, where the data-wait window opens",
    ),
    PrivateUse(
        "ray.train.torch.train_loop_utils",
        "_WrappedDataLoader.next_batch",
        None,
        "None once the epoch's data is exhausted: the data-wait window closes",
    ),
    PrivateUse(
        "ray.train.torch.train_loop_utils",
        "_WrappedDataLoader.__init__",
        ("base_dataloader", "device", "auto_transfer"),
        "builds the loader `prepare_data_loader` returns outside a Train worker, so a fast "
        "test can time its fetches; `prepare_data_loader` needs a Train session",
    ),
)


def time_prepared_loader_fetches(
    *, on_epoch_start: Callable[[], None], on_fetch: Callable[[float, bool], None]
) -> None:
    """Times the batch fetches of every loader `prepare_data_loader` returns (process-wide).

    Call once per process. `on_epoch_start()` runs when such a loader's iteration starts;
    `on_fetch(seconds, exhausted)` after each fetch, with `exhausted` True once the epoch's data
    is used up.
    """
    from ray.train.torch.train_loop_utils import _WrappedDataLoader

    fetch = _WrappedDataLoader._prefetch_next_batch
    start = _WrappedDataLoader.__iter__

    @functools.wraps(fetch)
    def _prefetch_next_batch(self: Any) -> None:
        began = time.perf_counter()
        try:
            fetch(self)
        finally:
            on_fetch(time.perf_counter() - began, self.next_batch is None)

    @functools.wraps(start)
    def __iter__(self: Any) -> Any:
        on_epoch_start()
        return start(self)

    _WrappedDataLoader._prefetch_next_batch = _prefetch_next_batch
    _WrappedDataLoader.__iter__ = __iter__


def prepared_data_loader(loader: Any, device: Any) -> Any:
    """`loader` wrapped as `prepare_data_loader` wraps it on `device` (no transfer; for tests)."""
    from ray.train.torch.train_loop_utils import _WrappedDataLoader

    return _WrappedDataLoader(loader, device, auto_transfer=False)
