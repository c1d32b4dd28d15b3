"""The loaders `ray.train.torch.prepare_data_loader` returns, timed for the data-wait metric."""

from __future__ import annotations

import functools
import importlib.abc
import sys
import time
from collections.abc import Callable
from typing import Any

from sweeplab.raycompat._ledger import PrivateUse

__all__ = [
    "USES",
    "run_when_imported",
    "time_prepared_loader_fetches",
]

_LOADER_MODULE = "ray.train.torch.train_loop_utils"

USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        _LOADER_MODULE,
        "_WrappedDataLoader._prefetch_next_batch",
        (),
        "the synchronous batch fetch of every prepared loader, timed for the data-wait metric; "
        "`prepare_data_loader` has no public hook",
        purpose="essential",
        feature="the data-wait metric",
    ),
    PrivateUse(
        _LOADER_MODULE,
        "_WrappedDataLoader.__iter__",
        (),
        "the start of an epoch, where the data-wait window opens",
        purpose="essential",
        feature="the data-wait metric",
    ),
    PrivateUse(
        _LOADER_MODULE,
        "_WrappedDataLoader.next_batch",
        None,
        "None once the epoch's data is exhausted: the data-wait window closes",
        purpose="essential",
        feature="the data-wait metric",
    ),
)


def time_prepared_loader_fetches(
    *, on_epoch_start: Callable[[], None], on_fetch: Callable[[float, bool], None]
) -> None:
    """Times the batch fetches of every loader `prepare_data_loader` returns (process-wide).

    Call once per process. `on_epoch_start()` runs when such a loader's iteration starts;
    `on_fetch(seconds, exhausted)` after each fetch, with `exhausted` True once the epoch's data
    is used up. The loaders' module imports torch (1.5 s of CPU), so it is not imported here:
    the loaders are patched now if it is already imported, else as soon as the trial imports it.
    """

    def patch(module: Any) -> None:
        loader_class = module._WrappedDataLoader
        fetch = loader_class._prefetch_next_batch
        start = loader_class.__iter__

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

        loader_class._prefetch_next_batch = _prefetch_next_batch
        loader_class.__iter__ = __iter__

    run_when_imported(_LOADER_MODULE, patch)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs `then(module)` right after the module `name` is first imported, then steps aside."""

    def __init__(self, name: str, then: Callable[[Any], None]) -> None:
        self.name = name
        self.then = then

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)  # the other finders find it; this runs once
        for finder in sys.meta_path:
            spec = getattr(finder, "find_spec", lambda *_: None)(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            exec_module, then = spec.loader.exec_module, self.then

            def exec_then(module: Any) -> None:
                exec_module(module)
                then(module)

            spec.loader.exec_module = exec_then
        return spec


def run_when_imported(name: str, then: Callable[[Any], None]) -> None:
    """`then(module)` now if the module `name` is imported, else once it is, in this process."""
    module = sys.modules.get(name)
    if module is not None:
        then(module)
        return
    sys.meta_path.insert(0, _AfterImport(name, then))
