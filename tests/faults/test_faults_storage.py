"""An unusable `--storage` fails at once: exit 2, one line naming the path, nothing started."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from toy_spec_path import write_spec


def test_storage_under_a_file_exits_2_naming_the_path(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, 'name="nostore", space={"x": 0.5}, metric="loss", mode="min"')
    blocker = tmp_path / "afile"
    blocker.write_text("a file, not a folder")
    storage = blocker / "sub"
    out = subprocess.run(
        [sys.executable, "-m", "sweeplab.cli", "sweep", str(spec), "--no-live",
         "--storage", str(storage), "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert str(storage) in lines[0] and "not writable" in lines[0]
    assert "Traceback" not in out.stdout + out.stderr
    assert not (tmp_path / "mlflow.db").exists(), "tracking started before the storage check"
