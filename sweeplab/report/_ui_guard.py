"""The guard of ``sweeplab ui``'s server: ``python -m sweeplab.report._ui_guard FD GRACE_S --
COMMAND...``.

It starts COMMAND in a process group of its own and ends that whole group (uvicorn's workers
included) as soon as end-of-file arrives on the pipe FD, whose only writer is ``sweeplab ui``:
the kernel closes it when that process dies, however it went (Ctrl-C, SIGTERM, SIGKILL).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

from sweeplab.raycompat import libc_function


def _become_subreaper() -> None:
    # Linux: orphans of the server's group (a worker whose parent died first) are re-parented to
    # the guard, which reaps them, so an empty group is seen as empty rather than as zombies
    # that PID 1 of a container may never reap.
    prctl = libc_function("prctl")
    if prctl is None:  # not Linux
        return
    pr_set_child_subreaper = 36
    prctl(pr_set_child_subreaper, 1, 0, 0, 0)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _group_alive(pgid: int) -> bool:
    _reap()
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _end_group(pgid: int, grace_s: float) -> None:
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if not _group_alive(pgid):
                return
            time.sleep(0.05)


def _guard(read_fd: int, grace_s: float, command: Sequence[str]) -> int:
    _become_subreaper()
    server = subprocess.Popen(list(command), start_new_session=True)
    # Set after the start: ignored signals stay ignored across exec.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stop: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.append(signum))
    status: int | None = None
    while not stop:
        try:
            ready, _, _ = select.select([read_fd], [], [], 0.2)
        except InterruptedError:
            continue
        if ready and not os.read(read_fd, 1024):
            break  # end-of-file: `sweeplab ui` is gone
        status = server.poll()
        if status is not None:
            break
    _end_group(server.pid, grace_s)
    if status is None:
        status = server.poll()
    return 0 if status is None or stop or status < 0 else status


if __name__ == "__main__":
    fd, grace, separator, *rest = sys.argv[1:]
    assert separator == "--", sys.argv
    sys.exit(_guard(int(fd), float(grace), rest))
