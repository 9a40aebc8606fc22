"""Servers a test owns outright, so that it may stop, restart or wipe them: a redis-server and
a PostgreSQL cluster, each on a free port of 127.0.0.1 and gone when the test is done.

The machine's own Redis and PostgreSQL serve every other test and session; these never touch
them.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis

from tests.helpers import eventually, free_port

START_TIMEOUT = 20.0


class RedisServer:
    """A redis-server that keeps nothing on disk: stopped and started again, it comes back
    empty, as a Redis that lost its data does."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=5)

    def start(self) -> None:
        command = [
            "redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no",
        ]  # fmt: skip
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        if not eventually(self.answers, timeout=START_TIMEOUT):
            raise RuntimeError(f"redis-server on port {self.port} did not start")

    def stop(self) -> None:
        """SIGKILL: every connection drops at once and nothing is saved."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def answers(self) -> bool:
        client = self.client()
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return False
        finally:
            client.close()


@contextmanager
def redis_server(port: int | None = None) -> Iterator[redis.Redis]:
    """A running RedisServer for the block, and a client of it."""
    server = RedisServer(port)
    server.start()
    client = server.client()
    try:
        yield client
    finally:
        client.close()
        server.stop()


def cluster_unavailable() -> str:
    """Why this machine cannot run a PostgreSQL cluster of a test's own ("" when it can)."""
    if postgres_binaries() is None:
        return "needs PostgreSQL's server programs (initdb, pg_ctl) to run a cluster"
    if os.geteuid() == 0 and not user_exists("postgres"):
        return "runs as root, and there is no postgres user to run PostgreSQL as"
    return ""


def user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def postgres_binaries() -> Path | None:
    """Where initdb and pg_ctl are: on the PATH, or where pg_config says (Debian keeps them
    off the PATH); None when this machine has no PostgreSQL server to run."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).parent
    pg_config = shutil.which("pg_config")
    if pg_config:
        done = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        bindir = Path(done.stdout.strip())
        if done.returncode == 0 and (bindir / "initdb").exists():
            return bindir
    return None


class PostgresCluster:
    """A PostgreSQL cluster of its own in a temporary directory, trust authentication, TCP on
    127.0.0.1 only. PostgreSQL will not run as root: as root it runs as the `postgres` user."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="a2ahub-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.user = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
        if self.user is not None:
            os.chown(self.root, self.user.pw_uid, self.user.pw_gid)

    def url(self, database: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def run(self, program: str, *args: str, timeout: float = 60) -> None:
        options: dict[str, Any] = {}
        if self.user is not None:
            options = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        done = subprocess.run(
            [str(self.bindir / program), *args], cwd=self.root, capture_output=True,
            text=True, timeout=timeout, **options,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"{program} {' '.join(args)} failed:\n{done.stdout}{done.stderr}")

    def init(self) -> None:
        self.run(
            "initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
            "--no-sync", "-E", "UTF8", "--locale=C",
        )  # fmt: skip

    def start(self) -> None:
        # fsync off: the tests restart the server cleanly, they do not test the disk.
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self.run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start")

    def stop(self) -> None:
        """Fast shutdown: every session is ended at once, as an operator's restart does."""
        self.run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def remove(self) -> None:
        if self.running():
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


@contextmanager
def postgres_cluster() -> Iterator[PostgresCluster]:
    """An initialised, running cluster for the block; stopped and deleted after it. (Check
    `cluster_unavailable()` first.)"""
    bindir = postgres_binaries()
    assert bindir is not None, cluster_unavailable()
    cluster = PostgresCluster(bindir)
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        cluster.remove()
