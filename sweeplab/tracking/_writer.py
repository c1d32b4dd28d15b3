"""The tracker's MLflow writes in a process of their own.

A trial costs the tracker about 30 ms of MLflow's Python (its ORM for a SQL store, its REST
client for a server). In the driver's process that work holds the GIL against Tune's event loop:
on 2 CPUs a 300-trial sweep of short trials took 30-35 s tracked against 25 s untracked. A
:class:`WriterProcess` runs the same :class:`~sweeplab.tracking._flusher.Flusher` in a child
interpreter and only forwards the trial events to it over a socket, so the driver pays a pickle
and a write per event.

The child:

- ignores SIGINT (Ctrl-C reaches the driver, which then drains the writer as usual);
- exits at once, delivering nothing more, when the driver goes away without stopping it, as the
  thread of a killed driver would; a resumed sweep backfills from Tune's results;
- sends its log records to the driver, which logs them under the same logger names.

If the child dies, the driver logs one error and the sweep goes on; what the child had not
delivered is missing from MLflow (the trials' results stay in the run folder).
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterable
from functools import partial
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from sweeplab.tracking._bulk import sql_bulk
from sweeplab.tracking._flusher import Flusher, MetricPoint

logger = logging.getLogger(__name__)

__all__ = ["WriterProcess"]

_SINK_OPS = frozenset({"add_run", "reopen", "log_metrics", "set_tags", "end_run"})
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
# The child finds this sweeplab where the driver's interpreter does, else where this file is.
_CHILD = (
    "import sys; sys.path.append(sys.argv.pop(1)); "
    "from sweeplab.tracking._writer import _serve; _serve(int(sys.argv[1]), *sys.argv[2:6])"
)


class WriterProcess:
    """A :class:`~sweeplab.tracking._flusher.Flusher` in a child process, with its interface.

    Args:
        tracking_uri: The resolved MLflow tracking URI.
        experiment_id: Experiment of the child runs.
        parent_run_id: Parent (sweep) run of the child runs.
        hold_s: ``Flusher``'s ``hold_s``.
    """

    def __init__(
        self, *, tracking_uri: str, experiment_id: str, parent_run_id: str, hold_s: float = 2.0
    ) -> None:
        self._args = [tracking_uri, experiment_id, parent_run_id, str(hold_s)]
        self._process: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self._send_lock = threading.Lock()
        self._request_lock = threading.Lock()
        self._replies: queue.Queue[Any] = queue.Queue()
        self._broken: str | None = None
        self._closing = False
        self._run_ids: dict[str, str] = {}
        self.delivered_points = 0
        self.dropped: list[dict[str, Any]] = []

    def start(self) -> None:
        ours, theirs = socket.socketpair()
        self._process = subprocess.Popen(
            [sys.executable, "-c", _CHILD, _PACKAGE_ROOT, str(theirs.fileno()), *self._args],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        self._conn = Connection(ours.detach())
        threading.Thread(target=self._read, name="sweeplab-writer-replies", daemon=True).start()

    # -- the sink (the sweep's event thread): one message each, never a wait for MLflow -----

    def add_run(self, trial_id: str, **kwargs: Any) -> None:
        self._send(_message("add_run", trial_id, **kwargs))

    def reopen(self, trial_id: str) -> None:
        self._send(_message("reopen", trial_id))

    def log_metrics(self, trial_id: str, points: Iterable[MetricPoint]) -> None:
        self._send(_message("log_metrics", trial_id, list(points)))

    def set_tags(self, trial_id: str, tags: dict[str, str]) -> None:
        self._send(_message("set_tags", trial_id, dict(tags)))

    def end_run(self, trial_id: str, status: str) -> None:
        self._send(_message("end_run", trial_id, status))

    # -- requests ---------------------------------------------------------------------------

    def run_id(self, trial_id: str) -> str | None:
        """The trial's child run id as of the last drain (or ``pending``)."""
        return self._run_ids.get(trial_id)

    def pending(self) -> int:
        state = self._request(_message("state"))
        return int(state["pending"]) if state else 0

    def drain(self, timeout_s: float) -> bool:
        state = self._request(_message("drain", timeout_s))
        return bool(state and state["delivered"])

    def stop(self) -> None:
        if self._process is None or self._closing:
            return
        self._closing = True
        self._request(_message("stop"))
        self._close()

    def abandon(self) -> None:
        """Ends the child without delivering what is pending, as a killed driver would."""
        self._closing = True
        self._send(_message("abandon"))
        self._close()

    def write_undelivered(self, path: Path) -> int:
        """What the child could not deliver, appended to ``path`` (JSON lines); the count."""
        count = self._request(_message("undelivered", str(path)))
        if isinstance(count, int):
            return count
        with path.open("a", encoding="utf-8") as file:
            file.write(json.dumps({"kind": "writer", "error": self._broken}) + "\n")
        return 1

    # -- plumbing ---------------------------------------------------------------------------

    def _send(self, message: tuple[Any, ...]) -> None:
        if self._broken is not None or self._conn is None:
            return
        try:
            with self._send_lock:
                self._conn.send(message)
        except OSError as error:
            self._fail(f"could not send to it ({error})")

    def _request(self, message: tuple[Any, ...]) -> Any:
        with self._request_lock:
            self._send(message)
            if self._broken is not None:
                return None
            reply = self._replies.get()
        if isinstance(reply, dict) and "run_ids" in reply:
            self._run_ids.update(reply["run_ids"])
            self.delivered_points = reply["delivered_points"]
            self.dropped = reply["dropped"]
        return reply

    def _read(self) -> None:
        """The child's messages: log records, logged here, and replies to requests."""
        assert self._conn is not None
        while True:
            try:
                kind, *body = self._conn.recv()
            except (EOFError, OSError):
                break
            if kind == "log":
                level, name, text = body
                logging.getLogger(name).log(level, "%s", text)
            else:
                self._replies.put(body[0])
        if self._broken is None and self._process is not None:
            code = self._process.wait()
            if not self._closing:
                self._fail(f"it exited with code {code}")
        self._replies.put(None)

    def _fail(self, why: str) -> None:
        if self._broken is None:
            self._broken = why
            logger.error(
                "The tracking writer process stopped (%s); trial data it had not delivered is "
                "missing from MLflow. The trials' results are kept in the sweep's run folder.",
                why,
            )

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        if self._process is not None:
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


def _message(op: str, *args: Any, **kwargs: Any) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    """What the driver sends the child: the `Flusher` call (or request) and its arguments."""
    return op, args, kwargs


class _Forward(logging.Handler):
    """Sends the child's log records to the driver."""

    def __init__(self, send: Any) -> None:
        super().__init__(logging.INFO)
        self._send = send

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):  # the driver is gone
            self._send(("log", record.levelno, record.name, record.getMessage()))


def _serve(fd: int, tracking_uri: str, experiment_id: str, parent_run_id: str, hold: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn = Connection(fd)
    send_lock = threading.Lock()

    def send(message: tuple[Any, ...]) -> None:
        with send_lock:
            conn.send(message)

    root = logging.getLogger("sweeplab")
    root.addHandler(_Forward(send))
    root.setLevel(logging.INFO)
    root.propagate = False

    from sweeplab.tracking._sqlite import write_ahead_log

    write_ahead_log(tracking_uri)

    def client() -> Any:
        from mlflow import MlflowClient

        return MlflowClient(tracking_uri)

    flusher = Flusher(
        client_factory=client,
        experiment_id=experiment_id,
        parent_run_id=parent_run_id,
        hold_s=float(hold),
        bulk_factory=partial(sql_bulk, tracking_uri, experiment_id, parent_run_id),
    )
    flusher.start()

    def state(delivered: bool) -> dict[str, Any]:
        return {
            "delivered": delivered,
            "pending": flusher.pending(),
            "run_ids": flusher.run_ids(),
            "delivered_points": flusher.delivered_points,
            "dropped": list(flusher.dropped),
        }

    while True:
        try:
            op, args, kwargs = conn.recv()
        except (EOFError, OSError):  # the driver is gone: deliver nothing more
            flusher.abandon()
            return
        if op in _SINK_OPS:
            getattr(flusher, op)(*args, **kwargs)
        elif op == "state":
            send(("reply", state(True)))
        elif op == "drain":
            send(("reply", state(flusher.drain(args[0]))))
        elif op == "undelivered":
            send(("reply", flusher.write_undelivered(Path(args[0]))))
        elif op == "stop":
            flusher.stop()
            send(("reply", state(True)))
            return
        elif op == "abandon":
            flusher.abandon()
            return
