"""A throwaway PostgreSQL cluster on 127.0.0.1 for the tracking tests (not a test module).

The server binaries come from Debian's ``postgresql`` package (``make postgres`` installs it);
Debian keeps them out of PATH, under /usr/lib/postgresql/<version>/bin.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from mlflow_server import free_port

# Postgres refuses to run as root; as root, the cluster runs as this system user instead.
SYSTEM_USER = "postgres"


def postgres_bin_dir() -> Path | None:
    """The folder holding ``initdb``, ``pg_ctl`` and ``createdb``; None when not installed."""
    found = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/pg_ctl")]
    if found:
        return max(found, key=lambda folder: int(folder.parent.name))  # the newest version
    on_path = shutil.which("pg_ctl")
    return Path(os.path.realpath(on_path)).parent if on_path else None


class PostgresCluster:
    """A PostgreSQL cluster made by ``initdb`` in a folder, served by ``pg_ctl`` on a free port.

    Trust authentication on 127.0.0.1 only: nothing outside the machine can reach it.
    """

    def __init__(self, bin_dir: Path) -> None:
        # Its own folder in the system's temp folder, not in pytest's (0700 root, out of the
        # postgres user's reach); removed by stop().
        self.root = Path(tempfile.mkdtemp(prefix="sweeplab-postgres-"))
        self.bin_dir = bin_dir
        self.data = self.root / "data"
        self.port = free_port()
        self.user = SYSTEM_USER if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
        self.started = False

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin_dir / args[0]), *args[1:]]
        if os.geteuid() == 0:
            command = ["runuser", "-u", SYSTEM_USER, "--", *command]
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=120, cwd=self.root, check=False
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"{' '.join(command)} exited {result.returncode}: {result.stderr or result.stdout}"
            )
        return result

    def start(self) -> None:
        if os.geteuid() == 0:
            info = pwd.getpwnam(SYSTEM_USER)
            os.chown(self.root, info.pw_uid, info.pw_gid)
        self._run(
            "initdb", "-D", str(self.data), "--auth=trust", "--encoding=UTF8",
            "--no-locale", "--username", self.user,
        )  # fmt: skip
        options = f"-h 127.0.0.1 -p {self.port} -k {self.root} -c fsync=off"
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.root / "postgres.log"),
            "-o", options, "-w", "-t", "60", "start",
        )  # fmt: skip
        self.started = True

    def create_database(self, name: str) -> str:
        """Creates a database and returns its libpq URI, ``postgresql://user@host:port/name``."""
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, name)
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        if self.started:
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop")
            self.started = False
        shutil.rmtree(self.root, ignore_errors=True)


def sqlalchemy_uri(libpq_uri: str) -> str:
    """The URI MLflow's ``--backend-store-uri`` takes, naming the psycopg (3) driver."""
    return libpq_uri.replace("postgresql://", "postgresql+psycopg://", 1)


def libpq_uri(sqlalchemy_uri: str) -> str:
    """The URI psycopg connects to, from one that names the driver (the inverse of the above)."""
    return sqlalchemy_uri.replace("postgresql+psycopg://", "postgresql://", 1)
