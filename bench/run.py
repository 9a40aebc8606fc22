"""One command that benchmarks the hub against the official A2A SDK on this machine.

It starts the hub in distributed mode (PostgreSQL, Redis, one Celery worker, then daphne and
uvicorn in turn) and the SDK's echo server (in-memory and PostgreSQL task stores), drives
blocking A2A 0.3 `message/send` at each with ../shared/bench/a2a_load.py, prints req/s, p50,
p99 and the hub/SDK ratios, and removes every process, database and Redis key it made.
With `--method get` it drives `tasks/get` instead, of tasks the generator's sends made first.

    python bench/run.py                  # from the repository root, with the venv's python
    python bench/run.py --help
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
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
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SHARED = REPO.parent / "shared" / "bench"
SERVER_CORE, GENERATOR_CORE = 0, 1
# Targets at c=16 from the project's brief: hub mode -> (reference, minimum ratio).
TARGETS = {"inline": ("sdk-memory", 0.8), "worker": ("sdk-postgres", 2.0)}
# A read (`--method get`) of a stored task, against the SDK reading its PostgreSQL store.
GET_TARGET = ("sdk-postgres", 1.0)
TARGET_CONCURRENCY = 16


# -- command line -------------------------------------------------------------------------


def add_service_arguments(p: argparse.ArgumentParser, redis_db: int) -> None:
    """Where the shared tools, PostgreSQL and the bench's own Redis database are."""
    p.add_argument(
        "--shared",
        type=Path,
        default=DEFAULT_SHARED,
        help="folder holding a2a_load.py and sdk_echo_server.py "
        "(default: ../shared/bench next to the repository)",
    )
    p.add_argument(
        "--pg",
        default="postgresql://postgres@127.0.0.1:5432",
        help="PostgreSQL server (no database part); bench databases are made here",
    )
    p.add_argument(
        "--redis",
        default=f"redis://127.0.0.1:6379/{redis_db}",
        help="a Redis database of the bench's own: it is flushed before and after",
    )


def add_run_arguments(p: argparse.ArgumentParser, first_port: int) -> None:
    """Pinning, ports, the results file and the logs: the same for every bench command."""
    p.add_argument(
        "--no-pin",
        action="store_true",
        help="do not pin (servers+PostgreSQL+Redis on core 0, clients on core 1)",
    )
    p.add_argument("--port", type=int, default=first_port, help="first of the ports the bench uses")
    p.add_argument("--markdown", type=Path, help="also write the results tables to this file")
    p.add_argument("--keep-logs", action="store_true", help="keep the servers' logs folder")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_service_arguments(p, redis_db=7)
    p.add_argument("-d", "--duration", type=float, default=8.0, help="measured seconds per run")
    p.add_argument(
        "--warmup",
        type=float,
        default=3.0,
        help="unmeasured seconds per run (connection pools fill)",
    )
    p.add_argument("-c", "--concurrency", default="1,16,64", help="comma-separated levels")
    p.add_argument(
        "--servers",
        default="sdk-memory,hub-daphne,hub-uvicorn,sdk-postgres",
        help="which servers to measure, in this order",
    )
    p.add_argument("--modes", default="inline,worker", help="hub execution modes to measure")
    p.add_argument("--method", default="send", choices=["send", "get"], help="what to drive")
    add_run_arguments(p, first_port=8150)
    p.add_argument("--json-out", type=Path, help="keep a2a_load's raw JSON lines here")
    args = p.parse_args(argv)
    args.levels = [int(c) for c in args.concurrency.split(",") if c.strip()]
    args.server_list = [s.strip() for s in args.servers.split(",") if s.strip()]
    args.mode_list = [m.strip() for m in args.modes.split(",") if m.strip()]
    return args


# -- processes ----------------------------------------------------------------------------


@dataclass
class Bench:
    """Everything the run made, so that `cleanup` can take it all down again."""

    args: argparse.Namespace
    logs: Path
    pin: bool
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    databases: list[str] = field(default_factory=list)
    pinned: dict[int, str] = field(default_factory=dict)  # pid -> original affinity list
    results: list[dict[str, Any]] = field(default_factory=list)
    tag: str = field(default_factory=lambda: f"{os.getpid()}")

    def pinned_command(self, command: list[str], core: int) -> list[str]:
        return ["taskset", "-c", str(core), *command] if self.pin else command

    def start(self, name: str, command: list[str], env: dict[str, str], cwd: Path) -> int:
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 (lives as long as the child)
        process = subprocess.Popen(
            self.pinned_command(command, SERVER_CORE), env=env, cwd=cwd,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        self.processes[name] = process
        return process.pid

    def stop(self, name: str) -> None:
        process = self.processes.pop(name, None)
        if process is None or process.poll() is not None:
            return
        # Each child leads its own session, so this reaches only what the bench started.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)

    def check_alive(self, name: str) -> None:
        process = self.processes[name]
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode}: {self.tail(name)}")

    def tail(self, name: str, lines: int = 25) -> str:
        path = self.logs / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def python() -> str:
    return sys.executable


def wait_http(bench: Bench, name: str, url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        bench.check_alive(name)
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.25)
    raise RuntimeError(f"{name} did not answer {url} within {timeout:.0f} s: {bench.tail(name)}")


def port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


# -- pinning the shared services ------------------------------------------------------------


def pids_named(*names: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if Path(f"/proc/{entry}/comm").read_text().strip() in names:
                    found.append(int(entry))
    return found


def pin_services(bench: Bench) -> None:
    """PostgreSQL and Redis share core 0 with the server under test, as the reference
    numbers were taken; the postmaster's new backends inherit it. Undone in `cleanup`."""
    for pid in pids_named("postgres", "redis-server"):
        with contextlib.suppress(OSError):
            bench.pinned[pid] = ",".join(map(str, sorted(os.sched_getaffinity(pid))))
            subprocess.run(["taskset", "-a", "-p", "-c", str(SERVER_CORE), str(pid)],
                           check=False, capture_output=True)  # fmt: skip


def unpin_services(bench: Bench) -> None:
    if not bench.pinned:
        return
    cores = os.sched_getaffinity(0) | set(range(os.cpu_count() or 1))
    everything = ",".join(map(str, sorted(cores)))
    # Backends forked while pinned inherited core 0; give every one of them all cores back.
    for pid in pids_named("postgres", "redis-server"):
        subprocess.run(["taskset", "-a", "-p", "-c", bench.pinned.get(pid, everything), str(pid)],
                       check=False, capture_output=True)  # fmt: skip
    bench.pinned.clear()


# -- databases and Redis ----------------------------------------------------------------------


def admin_sql(bench: Bench, statement: str) -> None:
    import psycopg

    with psycopg.connect(f"{bench.args.pg}/postgres", autocommit=True) as conn:
        conn.execute(statement)  # type: ignore[arg-type]


def create_database(bench: Bench, name: str) -> str:
    admin_sql(bench, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin_sql(bench, f'CREATE DATABASE "{name}"')
    bench.databases.append(name)
    return f"{bench.args.pg}/{name}"


def drop_databases(bench: Bench) -> None:
    for name in bench.databases:
        try:
            admin_sql(bench, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        except Exception as exc:
            print(f"could not drop database {name}: {exc}", file=sys.stderr)
    bench.databases.clear()


def flush_redis(bench: Bench) -> None:
    import redis

    redis.Redis.from_url(bench.args.redis).flushdb()


# -- the servers ------------------------------------------------------------------------------


def hub_env(database_url: str, redis_url: str, data_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "DJANGO_SETTINGS_MODULE": "a2ahub.settings",
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "SECRET_KEY": secrets.token_urlsafe(48),
        "DATA_DIR": str(data_dir),
        "DEBUG": "false",
        "LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
    })  # fmt: skip
    return env


WORKER_AGENT = """
from agents.models import Agent, Skill
echo = Agent.objects.get(slug="echo")
echo.execution_mode = "inline"
echo.save(update_fields=["execution_mode"])
worker, _ = Agent.objects.update_or_create(slug="echo-worker", defaults=dict(
    name="Echo (worker)", description="The echo agent, run as a Celery job.",
    executor_kind="echo", execution_mode="worker",
    default_input_modes=echo.default_input_modes, default_output_modes=echo.default_output_modes))
Skill.objects.get_or_create(agent=worker, skill_id="echo", defaults=dict(
    name="Echo", description="Repeats its input.", tags=["echo"], position=0))
print("agents:", list(Agent.objects.values_list("slug", "execution_mode")))
"""


def prepare_hub(bench: Bench, env: dict[str, str]) -> None:
    for step in (["migrate", "--noinput", "-v", "0"], ["seed_demo"], ["shell", "-c", WORKER_AGENT]):
        done = subprocess.run([python(), "manage.py", *step], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=180)  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {step[0]} failed:\n{done.stdout}\n{done.stderr}")
        if step[0] == "shell":
            print("  " + done.stdout.strip())


def start_celery(bench: Bench, env: dict[str, str]) -> int:
    command = [python(), "-m", "celery", "-A", "a2ahub", "worker", "-P", "threads", "-c", "4",
               "--without-gossip", "--without-mingle", "--without-heartbeat",
               "-l", "WARNING", "-n", f"bench{bench.tag}@%h"]  # fmt: skip
    return bench.start("celery", command, env, REPO)


def hub_web_command(server: str, port: int) -> list[str]:
    if server == "hub-daphne":
        # -v 0: no access log line per request (runhub's daphne keeps daphne's default, -v 1).
        return [python(), "-m", "a2ahub.daphne", "-v", "0", "-b", "127.0.0.1", "-p", str(port),
                "a2ahub.asgi:application"]  # fmt: skip
    return [python(), "-m", "uvicorn", "a2ahub.asgi:application", *uvicorn_flags(port),
            "--lifespan", "off"]  # fmt: skip


def uvicorn_flags(port: int) -> list[str]:
    return ["--host", "127.0.0.1", "--port", str(port), "--loop", "uvloop", "--http",
            "httptools", "--no-access-log", "--log-level", "warning"]  # fmt: skip


def start_sdk(bench: Bench, server: str, port: int, sdk_dsn: str) -> int:
    env = dict(os.environ, PYTHONUNBUFFERED="1", A2A_PUBLIC_URL=f"http://127.0.0.1:{port}")
    if server == "sdk-postgres":
        env.update(A2A_STORE="postgres", A2A_PG_DSN=sdk_dsn)
    else:
        env["A2A_STORE"] = "memory"
    command = [python(), "-m", "uvicorn", "sdk_echo_server:app", *uvicorn_flags(port)]
    return bench.start(server, command, env, bench.args.shared)


# -- load ---------------------------------------------------------------------------------------


def run_load(bench: Bench, label: str, url: str, concurrency: int, cpu_pids: list[int]) -> dict:
    args = bench.args
    out = bench.logs / "load.jsonl"
    command = [python(), str(args.shared / "a2a_load.py"), "--url", url, "--method", args.method,
               "--protocol", "0.3", "-c", str(concurrency), "-d", str(args.duration),
               "--warmup", str(args.warmup), "--label", label, "--json-out", str(out),
               "--cpu-comm", "postgres", "--cpu-comm", "redis-server"]  # fmt: skip
    for pid in cpu_pids:
        command += ["--cpu-pid", str(pid)]
    before = out.read_text().count("\n") if out.exists() else 0
    done = subprocess.run(bench.pinned_command(command, GENERATOR_CORE), capture_output=True,
                          text=True, timeout=args.duration + args.warmup + 120)  # fmt: skip
    lines = out.read_text().splitlines() if out.exists() else []
    if len(lines) <= before:
        raise RuntimeError(f"a2a_load gave no result for {label}:\n{done.stdout}\n{done.stderr}")
    result = json.loads(lines[-1])
    print(indent(done.stdout.strip()))
    return summarize(result, cpu_pids)


def summarize(raw: dict[str, Any], cpu_pids: list[int]) -> dict[str, Any]:
    if "fatal" in raw:
        return {"label": raw.get("label", ""), "fatal": raw["fatal"]}
    groups = (raw.get("cpu") or {}).get("groups", {})
    ok, window = raw["ok"], raw["window_s"]

    def ms_per_request(keys: list[str]) -> float | None:
        pct = sum(groups.get(k, {}).get("cpu_pct", 0.0) for k in keys)
        return round(pct / 100 * window * 1000 / ok, 2) if ok else None

    return {
        "label": raw["label"], "c": raw["concurrency"], "rps": raw["rps"], "ok": ok,
        "errors": raw["errors"], "error_kinds": raw["error_kinds"],
        "p50": raw["latency"].get("p50_ms"), "p99": raw["latency"].get("p99_ms"),
        "server_ms": ms_per_request([f"pid:{p}" for p in cpu_pids]),
        "pg_ms": ms_per_request(["comm:postgres"]),
        "redis_ms": ms_per_request(["comm:redis-server"]),
        "cores": {k: v["busy_pct"] for k, v in (raw.get("cpu") or {}).get("cores", {}).items()},
    }  # fmt: skip


def indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


# -- the run ------------------------------------------------------------------------------------


def bench_server(
    bench: Bench, server: str, targets: list[tuple[str, str]], pids: list[int]
) -> None:
    for mode, url in targets:
        label = f"{server}/{mode}" if mode else server
        for concurrency in bench.args.levels:
            print(f"  {label} c={concurrency}")
            result = run_load(bench, label, url, concurrency, pids)
            result.update(server=server, mode=mode, method=bench.args.method)
            bench.results.append(result)


def run_sdk(bench: Bench, server: str, port: int, sdk_dsn: str) -> None:
    print(f"\n== {server}")
    pid = start_sdk(bench, server, port, sdk_dsn)
    try:
        wait_http(bench, server, f"http://127.0.0.1:{port}/.well-known/agent-card.json")
        bench_server(bench, server, [("", f"http://127.0.0.1:{port}/")], [pid])
    finally:
        bench.stop(server)


def run_hub(bench: Bench, server: str, port: int, env: dict[str, str], celery_pid: int) -> None:
    print(f"\n== {server}")
    pid = bench.start(server, hub_web_command(server, port), env, REPO)
    try:
        wait_http(bench, server, f"http://127.0.0.1:{port}/agents/echo/.well-known/agent-card.json")
        slugs = {"inline": "echo", "worker": "echo-worker"}
        targets = [(m, f"http://127.0.0.1:{port}/agents/{slugs[m]}/jsonrpc/")
                   for m in bench.args.mode_list]  # fmt: skip
        bench_server(bench, server, targets, [pid, celery_pid])
        bench.check_alive("celery")
    finally:
        bench.stop(server)


def run_all(bench: Bench) -> None:
    args = bench.args
    ports = [p for p in range(args.port, args.port + 50) if port_free(p)][:4]
    sdk_dsn = create_database(bench, f"a2abench_sdk_{bench.tag}").replace(
        "postgresql://", "postgresql+asyncpg://"
    )
    hub_url = create_database(bench, f"a2abench_hub_{bench.tag}").replace(
        "postgresql://", "postgres://"
    )
    flush_redis(bench)
    env = hub_env(hub_url, args.redis, bench.logs / "data")
    hubs = [s for s in args.server_list if s.startswith("hub-")]
    celery_pid = 0
    if hubs:
        print("== preparing the hub (migrate, seed, echo-worker agent)")
        prepare_hub(bench, env)
        celery_pid = start_celery(bench, env)
    for index, server in enumerate(args.server_list):
        if server.startswith("hub-"):
            run_hub(bench, server, ports[index % 4], env, celery_pid)
        elif server in ("sdk-memory", "sdk-postgres"):
            run_sdk(bench, server, ports[index % 4], sdk_dsn)
        else:
            raise SystemExit(f"unknown server {server!r}")


def cleanup(bench: Bench) -> None:
    for name in list(bench.processes):
        bench.stop(name)
    with contextlib.suppress(Exception):
        flush_redis(bench)
    drop_databases(bench)
    unpin_services(bench)


# -- the report ------------------------------------------------------------------------------


def target_of(row: dict[str, Any]) -> tuple[str, float]:
    return GET_TARGET if row.get("method") == "get" else TARGETS[row["mode"]]


def reference_for(
    row: dict[str, Any], rows: list[dict[str, Any]]
) -> tuple[str, dict[str, Any] | None]:
    if not row["server"].startswith("hub-"):
        return "", None
    name = target_of(row)[0]
    for other in rows:
        if "fatal" not in other and other["server"] == name and other["c"] == row["c"]:
            return name, other
    return name, None


def fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def table(bench: Bench) -> str:
    head = (
        "| server | mode | c | req/s | p50 ms | p99 ms | errors | server CPU ms/req "
        "| PG CPU ms/req | x SDK (ref) |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|"]
    for r in bench.results:
        if "fatal" in r:
            lines.append(f"| {r['label']} | FATAL: {r['fatal']} |||||||||")
            continue
        name, ref = reference_for(r, bench.results)
        ratio = f"{r['rps'] / ref['rps']:.2f} ({name})" if ref and ref["rps"] else "-"
        lines.append(
            f"| {r['server']} | {r['mode'] or '-'} | {r['c']} | {fmt(r['rps'])} | {fmt(r['p50'])} "
            f"| {fmt(r['p99'])} | {r['errors']} | {fmt(r['server_ms'], 2)} | {fmt(r['pg_ms'], 2)} "
            f"| {ratio} |"
        )
    return "\n".join(lines)


def verdicts(bench: Bench) -> str:
    lines = []
    for row in bench.results:
        if "fatal" in row or not row["server"].startswith("hub-") or row["c"] != TARGET_CONCURRENCY:
            continue
        name, ref = reference_for(row, bench.results)
        want = target_of(row)[1]
        if ref is None or not ref["rps"]:
            lines.append(f"- {row['server']} {row['mode']}: no {name} run to compare with")
            continue
        ratio = row["rps"] / ref["rps"]
        verdict = "MET" if ratio >= want and row["errors"] == 0 else "MISSED"
        lines.append(f"- {row['server']} {row['mode']} at c={TARGET_CONCURRENCY}: "
                     f"{ratio:.2f}x {name} (target >= {want}x): {verdict}")  # fmt: skip
    return "\n".join(lines)


def environment(bench: Bench) -> str:
    from importlib.metadata import version

    pins = ("server, Celery, PostgreSQL, Redis on core 0; generator on core 1"
            if bench.pin else "not pinned")  # fmt: skip
    names = ("django", "daphne", "uvicorn", "celery", "a2a-sdk", "aiohttp")
    packages = ", ".join(f"{n} {version(n)}" for n in names)
    return (f"{dt.datetime.now().isoformat(timespec='minutes')}, {os.cpu_count()} cores, "
            f"Python {sys.version.split()[0]}; {packages}; pinning: {pins}; "
            f"{bench.args.duration:g} s measured + {bench.args.warmup:g} s warm-up per run; "
            + ("A2A 0.3 tasks/get" if bench.args.method == "get" else
               "A2A 0.3 message/send, blocking") + ", echo agent")  # fmt: skip


def report(bench: Bench) -> str:
    return "\n\n".join([f"Run: {environment(bench)}", table(bench), verdicts(bench)])


# -- main -----------------------------------------------------------------------------------------


def check_prerequisites(args: argparse.Namespace) -> bool:
    for name in ("a2a_load.py", "sdk_echo_server.py"):
        if not (args.shared / name).is_file():
            raise SystemExit(f"{args.shared / name} not found; point --shared at the folder")
    for module in ("aiohttp", "uvicorn", "uvloop", "httptools", "asyncpg", "sqlalchemy"):
        try:
            __import__(module)
        except ImportError:
            raise SystemExit(
                f"{module} is missing: pip install aiohttp 'a2a-sdk[http-server,postgresql]"
                "==1.3.0' 'uvicorn[standard]'"
            ) from None
    pin = not args.no_pin and shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2
    if not args.no_pin and not pin:
        print("taskset or a second core is missing: running unpinned", file=sys.stderr)
    return pin


@contextlib.contextmanager
def bench_session(
    args: argparse.Namespace,
    prefix: str,
    pin: bool,
    client_core: bool = False,
    before_logs_go: Callable[[Path], None] | None = None,
) -> Iterator[Bench]:
    """One bench run's servers: a logs folder and a `Bench`, the services pinned to their
    core (and this process to the clients' core when it is the client), and, whatever
    happens, every process stopped, databases dropped, pinning undone and the logs removed
    unless kept."""
    logs = Path(tempfile.mkdtemp(prefix=prefix))
    bench = Bench(args, logs, pin)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if pin and client_core:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, {GENERATOR_CORE})
    try:
        if pin:
            pin_services(bench)
        yield bench
    finally:
        cleanup(bench)
        if client_core:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
        if before_logs_go is not None:
            before_logs_go(logs)
        if args.keep_logs:
            print(f"\nserver logs kept in {logs}")
        else:
            shutil.rmtree(logs, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.shared = args.shared.resolve()
    pin = check_prerequisites(args)
    started = time.monotonic()

    def keep_load(logs: Path) -> None:
        if args.json_out and (logs / "load.jsonl").exists():
            shutil.copyfile(logs / "load.jsonl", args.json_out)

    with bench_session(args, "a2ahub-bench-", pin, before_logs_go=keep_load) as bench:
        run_all(bench)
    text = report(bench)
    print(f"\n{text}\n\n(total {time.monotonic() - started:.0f} s)")
    if args.markdown:
        args.markdown.write_text(f"# Hub vs SDK benchmark\n\n{text}\n")
    return 1 if any("fatal" in r or r["errors"] for r in bench.results) else 0


if __name__ == "__main__":
    sys.exit(main())
