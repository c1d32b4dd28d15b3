"""The `Sweep` declaration and the loading of spec files.

A spec file is plain Python that defines a module-level ``sweep = sweeplab.Sweep(...)``. Every
field is validated when the `Sweep` is constructed, so a bad spec fails before anything starts.
"""

from sweeplab.spec._load import load_spec, spec_only_modules
from sweeplab.spec._sweep import PLACEMENT_STRATEGIES, SCHEDULERS, SEARCHERS, Sweep

__all__ = [
    "PLACEMENT_STRATEGIES",
    "SCHEDULERS",
    "SEARCHERS",
    "Sweep",
    "load_spec",
    "spec_only_modules",
]
