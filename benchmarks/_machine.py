"""The machine a benchmark ran on, as its JSON records it."""

from __future__ import annotations

import os
import platform
from importlib import metadata
from typing import Any


def machine(load_start: tuple[float, float, float], *packages: str) -> dict[str, Any]:
    """CPUs, platform, Python, the versions of `packages`, and the load average at the start
    (given) and now."""
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        **{package: metadata.version(package) for package in packages},
        "load_start": load_start,
        "load_end": os.getloadavg(),
    }
