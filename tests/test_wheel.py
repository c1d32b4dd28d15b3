"""The wheel a user builds installs into a bare virtual environment and runs a sweep there.

As the README's install says: the sdist and the wheel built from it (`python -m build`), a fresh
venv that sees nothing of this one, `torch==2.13.0` first with its pip, then the wheel with its
runtime dependencies only from the package registry. From a folder outside the repository the
installed `sweeplab` runs `--help`, `preview` and, with the `examples` extra (the quickstart's
scikit-learn), a 2-trial sweep of experiments/quickstart.py on its own local Ray.

Installing the wheel's dependencies takes pip minutes on a 2-core machine and uv seconds with its
cache warm (`make` fills it), so uv installs them where this environment has it, as `make` does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "experiments" / "quickstart.py"
TORCH = "torch==2.13.0"  # the CPU build, found on this machine; a plain `torch` pulls CUDA's
# The variables that would point the venv's commands back at this environment or elsewhere.
UNSET = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "MLFLOW_TRACKING_URI", "RAY_ADDRESS")


def _run(
    argv: list[str | Path],
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    timings: dict[str, float] | None = None,
    label: str = "",
) -> str:
    """Runs ``argv`` to exit 0 and returns what it printed; its duration goes to ``timings``."""
    started = time.monotonic()
    done = subprocess.run(
        [str(arg) for arg in argv],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"{argv} exited {done.returncode}:\n{done.stdout[-6000:]}"
    if timings is not None:
        timings[label] = round(time.monotonic() - started, 1)
        print(f"{label}: {timings[label]} s", flush=True)
    return done.stdout


def _package_files() -> set[str]:
    """Every file of the sweeplab package in this checkout, Python or not, as the wheel names
    them: a template or data file left out of the wheel fails here."""
    return {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "sweeplab").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


@pytest.mark.timeout(1800)  # the build, a venv with torch, the install and a sweep: about 3 min
def test_the_built_wheel_installs_and_runs_a_sweep_outside_the_repository(
    tmp_path: Path,
) -> None:
    timings: dict[str, float] = {}
    dist, outside = tmp_path / "dist", tmp_path / "outside"
    outside.mkdir()
    build = [sys.executable, "-m", "build", "--outdir", dist, ROOT]  # the sdist, then its wheel
    _run(build, cwd=ROOT, timings=timings, label="build")
    (wheel,) = dist.glob("sweeplab-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert _package_files() <= names, sorted(_package_files() - names)
    assert not {name for name in names if not name.startswith(("sweeplab/", "sweeplab-"))}

    venv = tmp_path / "venv"
    python, sweeplab = venv / "bin" / "python", venv / "bin" / "sweeplab"
    env = {key: value for key, value in os.environ.items() if key not in UNSET}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])
    env.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")  # as tests/conftest.py
    _run([sys.executable, "-m", "venv", venv], cwd=outside, env=env, timings=timings, label="venv")
    pip = [python, "-m", "pip", "install", "--quiet"]
    _run([*pip, TORCH], cwd=outside, env=env, timings=timings, label="torch")
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    # Bytecode compiled at install, as pip does: else each of the sweep's Ray workers compiles it.
    uv_pip = [uv, "pip", "install", "--quiet", "--compile-bytecode", "--python", python]
    install = uv_pip if uv else pip
    _run([*install, wheel], cwd=outside, env=env, timings=timings, label="wheel")

    # The runtime dependencies alone: the command, the package from the venv, no dev tools.
    assert "usage: sweeplab" in _run([sweeplab, "--help"], cwd=outside, env=env)
    where = _run(
        [
            python,
            "-c",
            "import importlib.util, json, sweeplab, torch;"
            "print(json.dumps([sweeplab.__file__, torch.__version__,"
            " importlib.util.find_spec('pytest') is None]))",
        ],
        cwd=outside,
        env=env,
    )
    package, torch_version, no_pytest = json.loads(where.strip().splitlines()[-1])
    assert Path(package).is_relative_to(venv / "lib"), package
    assert "site-packages" in Path(package).parts and not Path(package).is_relative_to(ROOT)
    assert torch_version == "2.13.0+cpu" and no_pytest, where
    preview = _run([sweeplab, "preview", QUICKSTART, "--num-trials", "2"], cwd=outside, env=env)
    assert "sweep quickstart" in preview and "trial plan: 2 trials" in preview, preview

    examples = [*install, f"{wheel}[examples]"]
    _run(examples, cwd=outside, env=env, timings=timings, label="examples")
    sweep = _run(
        [sweeplab, "sweep", QUICKSTART, "--num-trials", "2"],
        cwd=outside,
        env=env,
        timings=timings,
        label="sweep",
    )
    assert "quickstart: 2 trials in" in sweep and "(0 errored)" in sweep, sweep
    assert "best config" in sweep, sweep
    best = json.loads((outside / "sweeplab-runs" / "quickstart" / "best_config.json").read_text())
    assert best["value"] >= 0.5 and Path(best["checkpoint"]).is_dir(), best
    assert "best trial" in _run([sweeplab, "best", "quickstart"], cwd=outside, env=env)
    print(f"wheel test timings (s), installer {'uv' if uv else 'pip'}: {timings}")
