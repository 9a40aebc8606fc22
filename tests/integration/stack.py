"""The distributed hub as real processes: how to start, watch, and stop them.

A fresh PostgreSQL database, a Redis database this session claims, two daphne web processes,
a gRPC process, two Celery workers and Celery beat, all configured from the environment as an
operator would. Each process writes to its own log file in the session's temporary directory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import redis

from tests.helpers import ROOT, free_port, wait_for_http, wait_for_port

# Redis databases this suite may take; each session claims one, so its broker queue never
# mixes with a developer's hub or with another run of this suite.
REDIS_DBS = range(5, 16)
REDIS_CLAIM_KEY = "a2ahub-integration:claimed-by"
HEARTBEAT_SECONDS = "0.5"
STALE_SECONDS = "3"
THREADS_PER_WORKER = 4
STARTUP_TIMEOUT = 90.0  # a start slowed by a loaded machine is not what any test measures
STOP_TIMEOUT = 10.0


def with_path(url: str, path: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, parts.fragment))


def postgres_url(database: str) -> str:
    return with_path(os.environ["DATABASE_URL"], f"/{database}")


def admin_connection(server: str | None = None) -> psycopg.Connection:
    """A connection to the `postgres` database of `server` (the URL of any database on it),
    the session's PostgreSQL (`DATABASE_URL`) by default."""
    url = with_path(server, "/postgres") if server else postgres_url("postgres")
    return psycopg.connect(plain_url(url), autocommit=True, connect_timeout=10)


def create_database(name: str, server: str | None = None) -> None:
    with admin_connection(server) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')


def drop_database(name: str, server: str | None = None) -> None:
    with admin_connection(server) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def log_tail(path: Path, lines: int = 40) -> str:
    if not path.exists():
        return f"(no log at {path})"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


@dataclass
class Process:
    """One hub process and the file its output goes to."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def describe(self) -> str:
        return f"--- {self.name} (pid {self.pid}) log tail:\n{log_tail(self.log)}"


@dataclass
class Hub:
    """The running hub: its web processes' base URLs, workers, and how to reach its rows."""

    env: dict[str, str]
    database_url: str
    logs: Path
    web_a: str = ""
    web_b: str = ""
    grpc: str = ""  # `host:port` of its gRPC process, when one was started
    more_web: list[str] = field(default_factory=list)  # web processes a test added
    processes: list[Process] = field(default_factory=list)

    @property
    def workers(self) -> list[Process]:
        return [p for p in self.processes if p.name.startswith("worker") and p.alive()]

    def spawn(self, name: str, command: list[str], env: dict[str, str] | None = None) -> Process:
        log = self.logs / f"{name}.log"
        with log.open("wb") as out:
            popen = subprocess.Popen(
                command, cwd=ROOT, env=self.env | (env or {}), stdout=out, stderr=subprocess.STDOUT
            )
        process = Process(name, popen, log)
        self.processes.append(process)
        return process

    def start_web(self, name: str, env: dict[str, str] | None = None) -> tuple[Process, str]:
        port = free_port()
        command = [sys.executable, "-m", "a2ahub.daphne", "-b", "127.0.0.1", "-p", str(port)]
        process = self.spawn(name, [*command, "a2ahub.asgi:application"], env)
        return process, f"http://127.0.0.1:{port}"

    @contextmanager
    def extra_web(
        self, name: str, env: dict[str, str] | None = None
    ) -> Iterator[tuple[Process, str]]:
        """One more web process of this hub, for one test: answering when it is handed over,
        ended after (the session's two stay up for later tests)."""
        process, base = self.start_web(name, env)
        try:
            wait_for_http(f"{base}/agents/echo/.well-known/agent-card.json", process.popen)
            yield process, base
        finally:
            process.popen.terminate()
            process.popen.wait(timeout=30)

    def start_bulk(self) -> Process:
        """The bulk process on the hub's A2A_BULK_SOCKET, as runhub starts it."""
        endpoint = f"unix:{self.env['A2A_BULK_SOCKET']}:lockfile=1"
        command = [sys.executable, "-m", "a2ahub.daphne", "-e", endpoint, "a2ahub.asgi:application"]
        return self.spawn("bulk", command, env={"A2AHUB_BULK_PROCESS": "1"})

    def start_grpc(self, name: str = "grpc") -> tuple[Process, str]:
        """`manage.py rungrpc` on the hub's GRPC_PORT, which its cards list."""
        command = [sys.executable, "manage.py", "rungrpc", "--host", "127.0.0.1"]
        return self.spawn(name, command), f"127.0.0.1:{self.env['GRPC_PORT']}"

    @property
    def grpc_metrics(self) -> str:
        return f"http://127.0.0.1:{self.env['GRPC_METRICS_PORT']}/metrics"

    def start_worker(self, name: str) -> Process:
        command = [
            sys.executable, "-m", "celery", "-A", "a2ahub", "worker",
            "-P", "threads", "-c", str(THREADS_PER_WORKER),
            "--without-gossip", "--without-mingle", "--without-heartbeat",
            "-l", "INFO", "-n", f"{name}@%h",
        ]  # fmt: skip
        return self.spawn(name, command)

    def start_beat(self) -> Process:
        """Celery beat: it runs the recovery of stale turns and sends the other periodic jobs
        (the push sweep). At INFO, as runhub runs it, so its log shows each recovery run."""
        command = [sys.executable, "-m", "celery", "-A", "a2ahub", "beat", "-l", "INFO"]
        return self.spawn("beat", command)

    def replace_worker(self, dead: Process) -> Process:
        """A fresh worker in place of one that died, so later tests keep two."""
        return self.start_worker(f"{dead.name}-again")

    def wait_for_worker(self, worker: Process, timeout: float = STARTUP_TIMEOUT) -> None:
        """Celery logs `ready.` once it consumes jobs and its maintenance thread runs."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not worker.alive():
                raise RuntimeError(f"{worker.name} exited")
            if " ready." in worker.log.read_text(errors="replace"):
                return
            time.sleep(0.1)
        raise TimeoutError(f"{worker.name} was not ready within {timeout}s")

    def wait_for_log(self, process: Process, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while text not in process.log.read_text(errors="replace"):
            if time.monotonic() > deadline:
                raise AssertionError(f"{process.name} did not log {text!r} within {timeout}s")
            time.sleep(0.1)

    def query(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of the hub's database, read as an operator would, beside the hub."""
        url = self.database_url.replace("postgres://", "postgresql://", 1)
        with psycopg.connect(url, connect_timeout=10) as connection:
            return connection.execute(sql, params).fetchall()

    def runner_of(self, task_id: str) -> str:
        """Which process runs (or ran) a task: `host:pid`, as the runner stores it."""
        rows = self.query("SELECT runner FROM tasks_task WHERE id = %s", (task_id,))
        return str(rows[0][0]) if rows else ""

    def process_running(self, task_id: str) -> Process | None:
        runner = self.runner_of(task_id)
        return next((p for p in self.processes if runner.endswith(f":{p.pid}")), None)

    def report(self) -> str:
        return "\n".join(p.describe() for p in self.processes)

    def stop(self) -> None:
        for process in self.processes:
            if process.alive():
                process.popen.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for process in self.processes:
            try:
                process.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.popen.kill()
                process.popen.wait(timeout=STOP_TIMEOUT)


def hub_env(database_url: str, redis_url: str, data_dir: Path) -> dict[str, str]:
    # The browser tests' Playwright sets DJANGO_ALLOW_ASYNC_UNSAFE in this process; a hub never
    # runs with it (a worker that did would hide ORM calls made from its event loops).
    dropped = {"PUBLIC_BASE_URL", "DEBUG", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    return env | {
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "SECRET_KEY": os.environ.get("SECRET_KEY") or f"integration-{uuid.uuid4().hex}",
        "DATA_DIR": str(data_dir),
        "DJANGO_SETTINGS_MODULE": "a2ahub.settings",
        "TASK_HEARTBEAT_SECONDS": HEARTBEAT_SECONDS,
        "TASK_STALE_SECONDS": STALE_SECONDS,
        # The audit log's counts reach the database within a second or two, not a minute.
        "AUDIT_FLUSH_SECONDS": "1",
        "A2A_BLOCKING_TIMEOUT_SECONDS": "30",
        # Smaller pools than production's: the suite runs up to three hubs at once in parallel
        # test processes, all on one PostgreSQL and its hundred connections (a hub of four
        # web processes and four workers held 38).
        "DATABASE_POOL_MIN": "0",
        "DATABASE_POOL_MAX": "5",
        # And idle connections are given back within seconds: a hub whose module is not
        # running keeps none (two hubs and an idle one passed the hundred, once).
        "DATABASE_POOL_IDLE_SECONDS": "5",
        "WORKER_DB_CONNECTIONS": "1",
        # Each hub's own: the cards of its web processes list it for its gRPC process.
        "GRPC_PORT": str(free_port()),
        "GRPC_METRICS_PORT": str(free_port()),
        # A short path: a Unix socket's may not pass 107 bytes.
        "A2A_BULK_SOCKET": str(Path(tempfile.mkdtemp(prefix="a2ahub-")) / "bulk.sock"),
        "PYTHONUNBUFFERED": "1",
    }


def prepare_database(env: dict[str, str]) -> None:
    """Fill the hub's empty database from the session's migrated and seeded copy: migrating
    costs some fifteen seconds of CPU a hub, restoring the copy about one."""
    restore = subprocess.run(
        ["psql", "-q", "-X", "-v", "ON_ERROR_STOP=1", "-d", plain_url(env["DATABASE_URL"]),
         "-f", str(seeded_dump(env["SECRET_KEY"]))],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if restore.returncode != 0:
        raise RuntimeError(f"restoring the seeded database failed:\n{restore.stderr}")


@cache
def seeded_dump(secret_key: str) -> Path:
    """A dump of a database migrated and seeded once per session (and key: seeding may
    encrypt with it), made on the session's PostgreSQL."""
    name = f"seeded_{uuid.uuid4().hex[:10]}"
    create_database(name)
    try:
        data = Path(tempfile.mkdtemp())
        env = hub_env(postgres_url(name), os.environ["REDIS_URL"], data) | {
            "SECRET_KEY": secret_key
        }
        migrate_and_seed(env)
        dump = Path(tempfile.mkdtemp()) / f"{name}.sql"
        subprocess.run(
            ["pg_dump", "--no-owner", "--no-privileges", "-f", str(dump),
             plain_url(postgres_url(name))],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
    finally:
        drop_database(name)
    return dump


def plain_url(url: str) -> str:
    return url.replace("postgres://", "postgresql://", 1)


def migrate_and_seed(env: dict[str, str]) -> None:
    """Migrate and seed in one process: each Django start costs seconds on a busy machine."""
    script = (
        "import django; django.setup(); from django.core.management import call_command; "
        "call_command('migrate', interactive=False, verbosity=0); call_command('seed_demo')"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"migrate and seed_demo failed:\n{done.stdout}\n{done.stderr}")


def claim_redis_database(session: str) -> str:
    """The URL of a Redis database no other session holds, emptied of everything but our claim."""
    for number in REDIS_DBS:
        url = with_path(os.environ["REDIS_URL"], f"/{number}")
        client = redis.Redis.from_url(url, socket_timeout=5)
        if client.set(REDIS_CLAIM_KEY, session, nx=True, ex=3600):
            stale = [key for key in client.scan_iter(count=1000) if key != REDIS_CLAIM_KEY.encode()]
            if stale:
                client.delete(*stale)
            return url
    raise RuntimeError(f"every Redis database in {REDIS_DBS} is claimed by another session")


def release_redis_database(url: str, session: str) -> None:
    client = redis.Redis.from_url(url, socket_timeout=5)
    if client.get(REDIS_CLAIM_KEY) == session.encode():
        client.flushdb()


def start_all(running: Hub) -> Hub:
    """Start every process at once, then wait for each to answer."""
    web_a, running.web_a = running.start_web("web-a")
    web_b, running.web_b = running.start_web("web-b")
    grpc, running.grpc = running.start_grpc()
    bulk = running.start_bulk()
    workers = [running.start_worker("worker1"), running.start_worker("worker2")]
    running.start_beat()
    try:
        for process, base in ((web_a, running.web_a), (web_b, running.web_b)):
            wait_for_http(f"{base}/agents/echo/.well-known/agent-card.json", process.popen)
        wait_for_port(running.grpc, grpc.popen)
        wait_for_port(running.env["A2A_BULK_SOCKET"], bulk.popen)
        for worker in workers:
            running.wait_for_worker(worker)
    except (RuntimeError, TimeoutError) as exc:
        raise RuntimeError(f"the hub did not start: {exc}\n{running.report()}") from exc
    return running


@contextmanager
def running_hub(
    database_url: str, redis_url: str, root: Path, settings: dict[str, str] | None = None
) -> Iterator[Hub]:
    """The whole hub against an empty database and a Redis of the caller's: migrated, seeded
    and started for the block, every process stopped after it. `settings` are environment
    variables of every process, over the session's."""
    env = hub_env(database_url, redis_url, root / "data") | (settings or {})
    running = Hub(env, env["DATABASE_URL"], root)
    try:
        prepare_database(env)
        yield start_all(running)
    finally:
        running.stop()


@contextmanager
def hub_of_its_own(
    prefix: str, root: Path, settings: dict[str, str] | None = None
) -> Iterator[Hub]:
    """A running hub on a database made for it and a Redis database claimed for it, all
    undone in reverse after the block: processes, database, Redis claim."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with ExitStack() as cleanup:
        redis_url = claim_redis_database(name)
        cleanup.callback(release_redis_database, redis_url, name)
        create_database(name)
        cleanup.callback(drop_database, name)
        yield cleanup.enter_context(running_hub(postgres_url(name), redis_url, root, settings))
