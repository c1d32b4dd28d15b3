"""A spec may import its training function from a folder it puts on `sys.path` itself."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from sweeplab.engine import SweepOptions, run_sweep
from sweeplab.spec import load_spec, spec_only_modules

pytestmark = pytest.mark.slow

HELPER = """
import ray.train


def train_func(config):
    for step in range(2):
        ray.train.report({"loss": config["x"] + 1.0 / (step + 1)})
"""

SPEC = """
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))

import sweeplab
from sweeplab import uniform
from {module} import train_func

sweep = sweeplab.Sweep(
    name="imported", train_func=train_func, space={{"x": uniform(0, 1)}}, metric="loss",
    mode="min", num_trials=2, max_iterations=2, seed=0,
)
"""


def test_a_train_func_from_a_folder_the_spec_added_reaches_the_workers(
    ray_local: None, tmp_path: Path
) -> None:
    # A module name of this test's own: the workers of the shared Ray cannot import it.
    module = f"helper_{tmp_path.name.replace('-', '_')}"
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / f"{module}.py").write_text(HELPER)
    (tmp_path / "specs").mkdir()
    spec = tmp_path / "specs" / "spec.py"
    spec.write_text(textwrap.dedent(SPEC.format(module=module)))
    sweep = load_spec(spec)
    assert module in spec_only_modules()
    options = SweepOptions(spec_path=spec, storage=tmp_path / "runs", live=False, track=False)
    outcome = run_sweep(sweep, options)
    assert outcome.trials == 2 and outcome.errored == 0
    assert outcome.best is not None
