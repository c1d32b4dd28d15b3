"""The prepared GPU check: its script parses, and its spec is refused cleanly without a GPU."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from sweeplab.cli import main
from sweeplab.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]


def test_gpu_check_script_parses() -> None:
    subprocess.run(["bash", "-n", str(ROOT / "benchmarks/gpu_check.sh")], check=True)


@pytest.mark.parametrize(("fraction", "workers"), [("1", "1"), ("0.25", "1"), ("1", "2")])
def test_gpu_spec_fields(monkeypatch: pytest.MonkeyPatch, fraction: str, workers: str) -> None:
    monkeypatch.setenv("GPU_FRACTION", fraction)
    monkeypatch.setenv("GPU_WORKERS", workers)
    sweep = load_spec(ROOT / "benchmarks/gpu_quickstart.py")
    assert sweep.use_gpu
    assert sweep.worker_resources == {"CPU": 1.0, "GPU": float(fraction)}
    assert sweep.workers_per_trial == int(workers)


def test_two_workers_on_a_fraction_of_a_gpu_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from sweeplab.errors import SpecError

    monkeypatch.setenv("GPU_FRACTION", "0.5")
    monkeypatch.setenv("GPU_WORKERS", "2")
    with pytest.raises(SpecError, match=r"`gpus_per_worker` must be >= 1 when a trial has several"):
        load_spec(ROOT / "benchmarks/gpu_quickstart.py")


def test_gpu_spec_refused_on_a_machine_without_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the spec fits")
    assert main(["preview", str(ROOT / "benchmarks/gpu_quickstart.py")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "1 GPU" in err[0] and "can never hold it" in err[0]


def test_device_run_script_parses_and_the_wheel_list_pins_every_wheel() -> None:
    from benchmarks.gpu_device import requirements

    subprocess.run(["bash", "-n", str(ROOT / "benchmarks/gpu_device_run.sh")], check=True)
    names = requirements()
    assert len(names) > 50 and all(re.fullmatch(r"[A-Za-z0-9_.-]+==[^=\s]+", n) for n in names)
    assert "ray==2.60.0" in names and not any(n.startswith("torch==") for n in names)


def test_wheels_are_split_and_packed_into_folders_under_the_limit(tmp_path: Path) -> None:
    from benchmarks.gpu_device import pack, split

    sizes = {"big.whl": 25, "a.whl": 7, "b.whl": 6, "c.whl": 3, "d.whl": 1}
    for name, size in sizes.items():
        (tmp_path / name).write_bytes(bytes(range(size)))
    parts = split(tmp_path / "big.whl", 10)
    assert [p.name for p in parts] == ["big.whl.part-aa", "big.whl.part-ab", "big.whl.part-ac"]
    assert b"".join(p.read_bytes() for p in parts) == bytes(range(25))  # `cat` joins them back
    assert not (tmp_path / "big.whl").exists()
    assert split(tmp_path / "a.whl", 10) == [tmp_path / "a.whl"]
    files = [*parts, *(tmp_path / n for n in ("a.whl", "b.whl", "c.whl", "d.whl"))]
    folders = pack(files, 10)
    assert all(sum(p.stat().st_size for p in f) <= 10 for f in folders)
    assert sorted(p.name for f in folders for p in f) == sorted(p.name for p in files)
    assert len(folders) == 5  # first fit, largest first: 10 / 10 / 7 + 3 / 6 + 1 / 5
    with pytest.raises(ValueError, match="larger than a folder"):
        pack([tmp_path / "a.whl"], 5)
