"""Real Ray clusters of several nodes on 127.0.0.1, started and stopped by the processes they own.

Other Ray clusters may run on the same machine, so nothing here calls a bare `ray stop`: every
port is picked free, each node has its own temp folder, and each node's `ray start --block`
runs in its own process group, which is what `RayNode.stop` and `RayNode.kill` signal. The
fault tests (tests/faults) and the scale-out benchmark start their clusters with this.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))


def free_ports(count: int) -> list[int]:
    """`count` TCP ports on 127.0.0.1 that nothing listens on now."""
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


def cluster_env() -> dict[str, str]:
    """The environment of the nodes and of the drivers that join them."""
    env = dict(os.environ)
    env["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] = "0"
    # `ray start --head` turns token auth on for a local cluster by itself; joining it (a
    # worker node, a driver) needs the mode said explicitly. `loopback_cluster` gives each
    # cluster its own token.
    env["RAY_AUTH_MODE"] = "token"
    # On a loaded 2-core machine a group's workers can take over a minute to start (torch
    # imports); Train's default 60 s then times the group out and retries, and the timed-out
    # attempt's placement group was seen holding the node's CPUs. Workers inherit this.
    env["RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S"] = "300"
    env.pop("RAY_ADDRESS", None)
    return env


def start_node(
    name: str, args: Sequence[str], temp_root: Path, env: dict[str, str], num_cpus: int = 2
) -> RayNode:
    """`ray start --block` of one node with declared CPUs, in its own process group."""
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
        f"--num-cpus={num_cpus}",
        *args,
    ]  # fmt: skip
    if "--head" in args:
        command.append(f"--ray-client-server-port={p_client}")
    log = temp_root / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    return RayNode(name=name, process=process, temp_dir=temp_dir, log=log)


def alive_nodes(address: str, env: dict[str, str]) -> int:
    """How many nodes of the cluster at `address` are alive (0 if it cannot be asked)."""
    code = (
        f"import json, ray; ray.init(address={address!r}, log_to_driver=False); "
        "print(json.dumps([n['Alive'] for n in ray.nodes()]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    return sum(json.loads(out.stdout.strip().splitlines()[-1])) if out.returncode == 0 else 0


def wait_for_nodes(
    address: str, nodes: Sequence[RayNode], env: dict[str, str], timeout_s: float
) -> None:
    """Waits until every node in `nodes` is alive in the cluster; raises if one exits."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for node in nodes:
            if node.process.poll() is not None:
                raise RuntimeError(f"ray node {node.name} exited:\n{node.log.read_text()[-3000:]}")
        if alive_nodes(address, env) >= len(nodes):
            return
        time.sleep(1)
    raise TimeoutError(f"the cluster did not reach {len(nodes)} nodes in {timeout_s} s")


@dataclasses.dataclass
class LoopbackCluster:
    address: str
    nodes: list[RayNode]
    env: dict[str, str]


@contextlib.contextmanager
def loopback_cluster(
    nodes: int, cpus_per_node: int, *, node_resources: Sequence[str] = ()
) -> Iterator[LoopbackCluster]:
    """A head and `nodes - 1` worker nodes, `cpus_per_node` declared CPUs each, on 127.0.0.1.

    Node i (the head first) also has the custom resource ``node_resources[i]``, if named, of
    `cpus_per_node`.
    """
    # Short root: Ray's unix socket paths must stay under 108 bytes.
    temp_root = Path(tempfile.mkdtemp(prefix="slmn-", dir="/tmp"))
    env = cluster_env()
    # `ray start` does not create a token (a `ray.init()` does, in ~/.ray/auth_token), so on a new
    # machine the head would refuse to start. The cluster gets its own token file, which its
    # nodes, their workers and the drivers given `env` read.
    token = temp_root / "auth_token"
    token.write_text(secrets.token_hex(32))
    token.chmod(0o600)
    env["RAY_AUTH_TOKEN_PATH"] = str(token)
    (gcs_port, dash_port) = free_ports(2)
    address = f"127.0.0.1:{gcs_port}"

    def extra(i: int) -> list[str]:
        if i >= len(node_resources):
            return []
        return ["--resources", json.dumps({node_resources[i]: cpus_per_node})]

    started: list[RayNode] = []
    try:
        started.append(
            start_node(
                "head",
                [
                    "--head", f"--port={gcs_port}", "--include-dashboard=false",
                    f"--dashboard-port={dash_port}", *extra(0),
                ],
                temp_root, env, cpus_per_node,
            )
        )  # fmt: skip
        time.sleep(3)
        for i in range(1, nodes):
            started.append(
                start_node(
                    f"worker{i}", [f"--address={address}", *extra(i)], temp_root, env, cpus_per_node
                )
            )
        wait_for_nodes(address, started, env, timeout_s=60 + 30 * nodes)
        yield LoopbackCluster(address=address, nodes=started, env=env)
    finally:
        for node in reversed(started):
            node.stop()
        shutil.rmtree(temp_root, ignore_errors=True)
