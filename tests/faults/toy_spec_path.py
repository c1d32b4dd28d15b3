"""Makes tests/engine/toy_spec.py importable from tests/faults (not a test module)."""

from __future__ import annotations

import sys
from pathlib import Path

_ENGINE_TESTS = str(Path(__file__).resolve().parents[1] / "engine")
if _ENGINE_TESTS not in sys.path:
    sys.path.insert(0, _ENGINE_TESTS)

from toy_spec import progress_rows, run_toy_sweep, write_spec  # noqa: E402

__all__ = ["progress_rows", "run_toy_sweep", "write_spec"]
