"""The Tune callback of a sweep's driver (imported only when a sweep runs)."""

from __future__ import annotations

from typing import Any

from ray.tune import Callback

__all__ = ["SINKS", "RelayCallback"]

# The live table and the tracker of the sweep running in this process.
SINKS: list[Any] = []


class RelayCallback(Callback):
    """Forwards every Tune callback hook to the sinks registered in this process.

    Tune pickles its run config, callbacks included, to resume a sweep. The tracker and the live
    table hold threads and clients, so they are not pickled: they are registered in `SINKS` by
    the process that runs (or resumes) the sweep, and this class, pickled by reference, finds them.
    """

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("on_") or name in ("setup", "on_checkpoint"):

            def forward(*args: Any, **kwargs: Any) -> None:
                for sink in list(SINKS):
                    method = getattr(sink, name, None)
                    if method is not None:
                        method(*args, **kwargs)

            return forward
        return super().__getattribute__(name)
