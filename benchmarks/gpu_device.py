"""Carry sweeplab to the offline GPU machine: its wheels, in folders small enough for one call.

python -m benchmarks.gpu_device pack [--out .whl]

The workplace's GPU machine (the device tool) cannot reach a package registry and takes at most
64 MiB a call, the repository included. `pack` downloads the wheels listed in
`benchmarks/gpu_wheels.txt` (CPython 3.12, x86-64 Linux: the machine's Python), splits a wheel
larger than a folder (Ray's, 79 MB) into parts, and packs everything into folders `.whl/1`,
`.whl/2`, ... of at most 54 MiB each. `.whl` must be ignored by git (`.git/info/exclude`).

On the machine, call after call (it keeps `/tmp` only while it is warm, 30 s after a call):
    run(carry=[".whl/1"], command="mkdir -p /tmp/w && cp .whl/1/* /tmp/w/")
    ... the same for each folder but the last, then:
    run(carry=[".whl/N"], command="GPU_CHECK_BENCH=0 bash benchmarks/gpu_device_run.sh .whl/N")
`gpu_device_run.sh` joins the parts, installs the wheels under /tmp/site, runs
`benchmarks/gpu_check.sh` and copies its step logs to `$OUT`. In 2026-12 a call to start the
machine and carry three folders took about a minute of its 15; the check's sweeps 2 to 3 minutes.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WHEELS = ROOT / "benchmarks" / "gpu_wheels.txt"
FOLDER_LIMIT = 54 * 1024 * 1024
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64")  # fmt: skip


def requirements(path: Path = WHEELS) -> list[str]:
    """The ``name==version`` lines of `path`."""
    lines = (line.strip() for line in path.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def split(path: Path, limit: int) -> list[Path]:
    """`path` itself if it fits in `limit` bytes, else its parts ``NAME.part-aa``, ``-ab``, ...
    (in that order; `cat` joins them back), written beside it, and `path` removed."""
    size = path.stat().st_size
    if size <= limit:
        return [path]
    parts = []
    with path.open("rb") as whole:
        for index in range(-(-size // limit)):
            part = path.with_name(f"{path.name}.part-a{chr(ord('a') + index)}")
            part.write_bytes(whole.read(limit))
            parts.append(part)
    path.unlink()
    return parts


def pack(files: list[Path], limit: int) -> list[list[Path]]:
    """`files` in as few folders of at most `limit` bytes as first-fit, largest first, finds.

    Raises:
        ValueError: A file larger than `limit` (split it first).
    """
    folders: list[tuple[int, list[Path]]] = []
    for path in sorted(files, key=lambda p: (-p.stat().st_size, p.name)):
        size = path.stat().st_size
        if size > limit:
            raise ValueError(f"{path.name} ({size} bytes) is larger than a folder ({limit})")
        for index, (used, members) in enumerate(folders):
            if used + size <= limit:
                folders[index] = (used + size, [*members, path])
                break
        else:
            folders.append((size, [path]))
    return [members for _, members in folders]


def download(names: list[str], into: Path) -> None:
    """Downloads the wheels `names` (``name==version``) for CPython 3.12 on x86-64 Linux."""
    platforms = [arg for platform in (*PLATFORMS, "any") for arg in ("--platform", platform)]
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
         "--python-version", "3.12", "--implementation", "cp", *platforms, "-d", str(into),
         *names],
        check=True,
    )  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["pack"])
    parser.add_argument("--out", type=Path, default=ROOT / ".whl")
    args = parser.parse_args(argv)
    staging = args.out / "all"
    staging.mkdir(parents=True, exist_ok=True)
    download(requirements(), staging)
    files = [part for wheel in sorted(staging.glob("*.whl")) for part in split(wheel, FOLDER_LIMIT)]
    for number, members in enumerate(pack(files, FOLDER_LIMIT), start=1):
        folder = args.out / str(number)
        folder.mkdir(exist_ok=True)
        for path in members:
            path.rename(folder / path.name)
        size = sum(p.stat().st_size for p in folder.iterdir())
        print(f"{folder}: {len(members)} files, {size / 2**20:.1f} MiB")
    staging.rmdir()


if __name__ == "__main__":
    main()
