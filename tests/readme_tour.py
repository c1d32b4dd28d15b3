"""The README's tour, run for real, so that the output it shows cannot drift from the product.

Runs each tour command as a newcomer would: in a fresh folder holding a link to experiments/,
with the `sweeplab` command of this interpreter, a local Ray that the sweep starts itself and
MLflow's default SQLite store in that folder. It writes each command and what it printed
(stdout and stderr, as a terminal shows them) into README.md between ``<!-- tour:NAME -->`` and
``<!-- /tour:NAME -->``, or compares them with what the README shows after masking what changes
from one run to the next: numbers, ids, the temporary folder and column widths.

    python -m tests.readme_tour            # check: exit 1 and a diff of each block that differs
    python -m tests.readme_tour --write    # refresh the README's blocks from one real run

tests/test_readme_tour.py runs the check.
"""

from __future__ import annotations

import argparse
import difflib
import os
import queue
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
REFRESH = "python -m tests.readme_tour --write"
ELLIPSIS = "…"
COMMAND_TIMEOUT_S = 600
UI_START_TIMEOUT_S = 120


@dataclass(frozen=True)
class Step:
    """One tour command and which of its lines the README shows.

    Attributes:
        name: the README block's name (``<!-- tour:NAME -->``).
        args: the arguments of ``sweeplab``.
        head: lines shown from the start (all when None).
        tail: lines shown from the end, after an ellipsis line, when ``head`` cuts.
    """

    name: str
    args: tuple[str, ...]
    head: int | None = None
    tail: int = 0


SPEC = "experiments/quickstart.py"
TRIALS = ("--num-trials", "2")  # a short sweep that still shows ASHA stopping a trial
TOUR = (
    Step("help", ("--help",), head=3),
    Step("preview", ("preview", SPEC, *TRIALS)),
    Step("sweep", ("sweep", SPEC, *TRIALS), head=11, tail=2),  # less the best config's JSON
    Step("best", ("best", "quickstart"), head=1, tail=2),
    Step("report", ("report", "quickstart", "--out", "report.html")),
    # Blocks until Ctrl-C: run until the server answers, then interrupted.
    Step("ui", ("ui", "quickstart"), head=2, tail=1),
)

# What differs between two honest runs, masked on both sides before they are compared. The
# order matters: ids before the numbers inside them.
_MASKS = (
    (re.compile(r"\S*sweeplab-tour-\w+"), "<folder>"),  # the tour's temporary folder
    (re.compile(r" --port \d+"), ""),  # the ui step's port when 5000 is taken
    (re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{32}(?![0-9A-Za-z])"), "<run id>"),  # MLflow runs
    (re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{8}(?![0-9A-Za-z])"), "<id>"),  # Tune's trials
    (re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{5}_\d{5}(?![0-9A-Za-z])"), "<id>"),  # the loop's
    (re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?"), "9"),  # metrics, configs, times, pids
    (re.compile(r"([ ━─█])\1+"), r"\1"),  # column widths, rules and bars that fit them
)


class TourError(RuntimeError):
    """A tour command failed, or the README has no block for a step."""


def mask(text: str) -> str:
    """``text`` with what changes from run to run replaced by fixed tokens."""
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return "\n".join(line.rstrip() for line in text.splitlines())


def as_terminal_shows(raw: str) -> list[str]:
    """Output lines as a terminal leaves them: a carriage return (a progress bar's redraw)
    keeps what was written after it; trailing blank lines and spaces go."""
    lines = []
    for line in raw.replace("\r\n", "\n").split("\n"):
        parts = [part for part in line.split("\r") if part.strip()]
        lines.append(parts[-1].rstrip() if parts else "")
    while lines and not lines[-1]:
        lines.pop()
    return lines


def shown(step: Step, lines: Sequence[str]) -> list[str]:
    """The lines of ``step``'s output that the README shows."""
    if step.head is None or len(lines) <= step.head + step.tail:
        return list(lines)
    return [*lines[: step.head], ELLIPSIS, *(lines[-step.tail :] if step.tail else [])]


def block(step: Step, lines: Sequence[str]) -> str:
    """The README's fenced block of one step: the command, then its output."""
    command = shlex.join(["sweeplab", *step.args])
    return "\n".join(["```console", f"$ {command}", *shown(step, lines), "```"])


def _environment() -> dict[str, str]:
    """This environment less what would point the tour elsewhere or change its layout."""
    env = dict(os.environ)
    for name in ("MLFLOW_TRACKING_URI", "RAY_ADDRESS", "COLUMNS", "LINES", "FORCE_COLOR"):
        env.pop(name, None)
    env.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")  # as tests/conftest.py
    return env


def _sweeplab() -> list[str]:
    """This interpreter's `sweeplab` command."""
    script = Path(sys.executable).parent / "sweeplab"
    return [str(script)] if script.exists() else [sys.executable, "-m", "sweeplab.cli"]


def _free_port(preferred: int = 5000) -> int:
    for port in (preferred, 0):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(probe.getsockname()[1])
    raise AssertionError("binding port 0 always succeeds")


def _run(step: Step, folder: Path) -> list[str]:
    started = time.monotonic()
    done = subprocess.run(
        [*_sweeplab(), *step.args],
        cwd=folder,
        env=_environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=COMMAND_TIMEOUT_S,
    )
    lines = as_terminal_shows(done.stdout.decode(errors="replace"))
    if done.returncode != 0:
        raise TourError(
            f"`sweeplab {shlex.join(step.args)}` exited {done.returncode}:\n" + "\n".join(lines)
        )
    print(f"tour: sweeplab {shlex.join(step.args)}: {time.monotonic() - started:.1f}s", flush=True)
    return lines


def _run_ui(step: Step, folder: Path) -> tuple[Step, list[str]]:
    """Starts `sweeplab ui`, reads its lines up to the server's own line naming the address,
    checks that the address answers, then stops it as Ctrl-C would."""
    port = _free_port()
    if port != 5000:
        step = Step(step.name, (*step.args, "--port", str(port)), step.head, step.tail)
    address = f"127.0.0.1:{port}"
    process = subprocess.Popen(
        [*_sweeplab(), *step.args],
        cwd=folder,
        env=_environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert process.stdout is not None
    received: queue.Queue[str | None] = queue.Queue()

    def read(stream: Any) -> None:
        for line in stream:
            received.put(line.decode(errors="replace"))
        received.put(None)

    threading.Thread(target=read, args=(process.stdout,), daemon=True).start()
    lines: list[str] = []  # up to the server's line naming the address: what the README shows
    problem = ""
    deadline = time.monotonic() + UI_START_TIMEOUT_S
    while not problem:
        try:
            line = received.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            problem = "printed no server address in time"
            break
        if line is None:
            problem = f"exited {process.wait()}"
            break
        lines.append(line)
        # sweeplab's own lines name the address first; the server's line follows them.
        if address in line and not line.startswith(("MLflow UI on ", "  sweep ")):
            break
    if not problem and not _answers(f"http://{address}/"):
        problem = f"printed its address, but http://{address}/ did not answer in time"
    process.send_signal(signal.SIGINT)  # what Ctrl-C sends it; its guard ends the server
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if problem:
        rest = []
        while (line := _next(received)) is not None:
            rest.append(line)
        raise TourError(f"`sweeplab {shlex.join(step.args)}` {problem}:\n" + "".join(lines + rest))
    print(f"tour: sweeplab {shlex.join(step.args)}: stopped ({process.returncode})", flush=True)
    return step, as_terminal_shows("".join(lines))


def _next(received: queue.Queue[str | None], timeout_s: float = 5) -> str | None:
    try:
        return received.get(timeout=timeout_s)
    except queue.Empty:
        return None


def _answers(url: str, timeout_s: float = 120) -> bool:
    """Whether ``url`` answers 200 within ``timeout_s`` (asked directly, never through a proxy)."""
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with direct.open(url, timeout=30) as response:
                if response.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.5)
    return False


def run_tour() -> dict[str, str]:
    """Runs every step in a fresh folder; returns each step's README block by name."""
    folder = Path(tempfile.mkdtemp(prefix="sweeplab-tour-"))
    try:
        (folder / "experiments").symlink_to(ROOT / "experiments", target_is_directory=True)
        blocks = {}
        for step in TOUR:
            if step.name == "ui":
                step, lines = _run_ui(step, folder)
            else:
                lines = _run(step, folder)
            blocks[step.name] = block(step, lines)
        return blocks
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _marked(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- tour:{name} -->\n)(.*?)(<!-- /tour:{name} -->)", re.DOTALL)


def readme_blocks(readme: str) -> dict[str, str]:
    """The README's block of each tour step that it marks (its text between the markers)."""
    found = {}
    for step in TOUR:
        match = _marked(step.name).search(readme)
        if match:
            found[step.name] = match.group(2).rstrip("\n")
    return found


def differences(readme: str, blocks: dict[str, str]) -> list[str]:
    """One message per step whose README block differs from ``blocks`` after masking."""
    shown_now = readme_blocks(readme)
    messages = []
    for name, real in blocks.items():
        if name not in shown_now:
            messages.append(f"README.md has no <!-- tour:{name} --> ... <!-- /tour:{name} -->")
            continue
        expected, actual = mask(shown_now[name]), mask(real)
        if expected != actual:
            diff = difflib.unified_diff(
                expected.splitlines(),
                actual.splitlines(),
                f"README.md tour:{name} (masked)",
                "sweeplab now (masked)",
                lineterm="",
            )
            messages.append(f"the README's tour:{name} block differs:\n" + "\n".join(diff))
    return messages


def with_blocks(readme: str, blocks: dict[str, str]) -> str:
    """``readme`` with each marked block replaced by ``blocks``' text."""
    for name, text in blocks.items():
        pattern = _marked(name)
        if not pattern.search(readme):
            raise TourError(f"README.md has no <!-- tour:{name} --> ... <!-- /tour:{name} -->")
        readme = pattern.sub(lambda m, text=text: f"{m.group(1)}{text}\n{m.group(3)}", readme)
    return readme


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.readme_tour", description=__doc__)
    parser.add_argument("--write", action="store_true", help="refresh README.md's tour blocks")
    args = parser.parse_args(argv)
    blocks = run_tour()
    readme = README.read_text()
    if args.write:
        README.write_text(with_blocks(readme, blocks))
        print(f"tour: wrote {len(blocks)} blocks into {README}")
        return 0
    messages = differences(readme, blocks)
    for message in messages:
        print(message, file=sys.stderr)
    if messages:
        print(f"refresh the README with: {REFRESH}", file=sys.stderr)
        return 1
    print(f"tour: README.md's {len(blocks)} blocks match the real output")
    return 0


if __name__ == "__main__":
    sys.exit(main())
