"""A real 2-node Ray cluster on loopback, started and stopped by the processes it owns.

Other Ray clusters may run on the same machine, so nothing here calls a bare `ray stop`: every
port is picked free, each node has its own temp folder, and each node's `ray start --block`
runs in its own process group, which is what the fixture kills.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RAY = str(Path(sys.executable).with_name("ray"))


def free_ports(count: int) -> list[int]:
    sockets, ports = [], []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
        ports.append(s.getsockname()[1])
    for s in sockets:
        s.close()
    return ports


@dataclasses.dataclass
class RayNode:
    name: str
    process: subprocess.Popen[bytes]
    temp_dir: Path
    log: Path

    def kill(self) -> None:
        """SIGKILL the node: `ray start --block`, its raylet and every worker of the node."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM the node's process group (a clean stop), then SIGKILL what is left."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # stragglers of the group
        self.process.wait(timeout=30)


@dataclasses.dataclass
class Cluster:
    address: str
    head: RayNode
    worker: RayNode
    env: dict[str, str]

    def alive_nodes(self) -> int:
        code = (
            f"import json, ray; ray.init(address={self.address!r}, log_to_driver=False); "
            "print(json.dumps([n['Alive'] for n in ray.nodes()]))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], env=self.env, capture_output=True, text=True, timeout=60
        )
        return sum(json.loads(out.stdout.strip().splitlines()[-1])) if out.returncode == 0 else 0


def _start_node(name: str, args: list[str], temp_root: Path, env: dict[str, str]) -> RayNode:
    temp_dir = temp_root / name
    temp_dir.mkdir(parents=True)
    (p_nm, p_om, p_agent, p_agent_grpc, p_rte, p_metrics, p_client) = free_ports(7)
    command = [
        RAY, "start", "--block", "--disable-usage-stats",
        "--node-ip-address", "127.0.0.1",
        f"--temp-dir={temp_dir}",
        f"--node-manager-port={p_nm}",
        f"--object-manager-port={p_om}",
        f"--dashboard-agent-listen-port={p_agent}",
        f"--dashboard-agent-grpc-port={p_agent_grpc}",
        f"--runtime-env-agent-port={p_rte}",
        f"--metrics-export-port={p_metrics}",
        "--num-cpus=2",
        *args,
    ]  # fmt: skip
    if name == "head":
        command.append(f"--ray-client-server-port={p_client}")
    log = temp_root / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    return RayNode(name=name, process=process, temp_dir=temp_dir, log=log)


def _wait_for_nodes(cluster: Cluster, count: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for node in (cluster.head, cluster.worker):
            if node.process.poll() is not None:
                raise RuntimeError(f"ray node {node.name} exited:\n{node.log.read_text()[-3000:]}")
        if cluster.alive_nodes() >= count:
            return
        time.sleep(1)
    raise TimeoutError(f"the cluster did not reach {count} nodes in {timeout_s} s")


@pytest.fixture(scope="module")
def two_node_cluster() -> Iterator[Cluster]:
    """Head (resource `node_a`) and worker (`node_b`), 2 CPUs each, on 127.0.0.1.

    Token authentication stays as Ray configures it (on for local clusters, the token in
    ~/.ray/auth_token); the sweep subprocess authenticates with the same token file.
    """
    # Short root: Ray's unix socket paths must stay under 108 bytes.
    temp_root = Path(tempfile.mkdtemp(prefix="slmn-", dir="/tmp"))
    env = dict(os.environ)
    env["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] = "0"
    # `ray start --head` turns token auth on for a local cluster by itself; joining it (a
    # worker node, a driver) needs the mode said explicitly. The token is ~/.ray/auth_token.
    env["RAY_AUTH_MODE"] = "token"
    # On a loaded 2-core machine a group's workers can take over a minute to start (torch
    # imports); Train's default 60 s then times the group out and retries, and the timed-out
    # attempt's placement group was seen holding the node's CPUs. Workers inherit this.
    env["RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S"] = "300"
    env.pop("RAY_ADDRESS", None)
    (gcs_port, dash_port) = free_ports(2)
    address = f"127.0.0.1:{gcs_port}"
    head = _start_node(
        "head",
        [
            "--head",
            f"--port={gcs_port}",
            "--include-dashboard=false",
            f"--dashboard-port={dash_port}",
            "--resources", json.dumps({"node_a": 2}),
        ],
        temp_root,
        env,
    )  # fmt: skip
    worker = None
    try:
        time.sleep(3)
        worker = _start_node(
            "worker",
            [f"--address={address}", "--resources", json.dumps({"node_b": 2})],
            temp_root,
            env,
        )
        cluster = Cluster(address=address, head=head, worker=worker, env=env)
        _wait_for_nodes(cluster, 2, timeout_s=90)
        yield cluster
    finally:
        if worker is not None:
            worker.stop()
        head.stop()
        shutil.rmtree(temp_root, ignore_errors=True)
