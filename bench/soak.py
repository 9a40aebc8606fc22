"""Soak: the hub holding many open streams under a steady rate of sends for a long while, and
whether what it holds (memory, file descriptors, connections) stays flat.

It starts the hub in distributed mode with bench/run.py's machinery (PostgreSQL, Redis, one
Celery worker, one daphne), or uses a running hub (`--url`), then

1. opens `--streams` SSE streams and keeps that many open: half A2A 1.0, half 0.3; half a
   streamed send (`SendStreamingMessage` / `message/stream`), half a non-blocking send then
   `SubscribeToTask` / `tasks/resubscribe`. Each follows a task of a slow agent (progress every
   `--step` s for 1 to 10 minutes); a stream that ends with its task is replaced by a new one,
   so streams and tasks come and go all along, as they would in production;
2. sends `--rate` blocking messages a second (1.0 and 0.3 in turn) to the echo agent;
3. every `--sample` s reads the web processes' (and the worker's) RSS, open file descriptors,
   sockets and threads from /proc, the established connections to the web port, the
   hub's PostgreSQL connections (pg_stat_activity) and Redis clients (CLIENT LIST);
4. after `--minutes`, compares the last third of the samples with the first third and says
   whether each stays flat (growth within `--tolerance` %).

    python bench/soak.py                                # 10 minutes, 1,000 streams, 50 sends/s
    python bench/soak.py --minutes 1 --streams 100      # a quick try
    python bench/soak.py --url http://127.0.0.1:8000 --database-url postgres://... --pid 1234
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as hub
from streams import proc_memory, raise_fd_limit

HOLD_AGENT = "soak-hold"
SEND_AGENT = "echo"
V1, V03 = "1.0", "0.3"
# Redis databases 5 to 15 are the integration tests' (each session empties the one it claims).
REDIS_DB = 3
MIN_TASK_SECONDS, MAX_TASK_SECONDS = 60, 600  # the slow executor's longest is 600 s
AGENTS = """
from agents.models import Agent, Skill
agent, _ = Agent.objects.update_or_create(slug=SLUG, defaults=dict(
    name=SLUG, description="soak agent", executor_kind="slow",
    execution_mode="inline", executor_settings={"step": STEP}, streaming=True))
Skill.objects.get_or_create(agent=agent, skill_id="wait", defaults=dict(
    name="Wait", description="wait", tags=["soak"], position=0))
print("soak agent:", agent.slug, agent.executor_kind, agent.execution_mode, agent.executor_settings)
"""


# -- command line --------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    hub.add_service_arguments(p, redis_db=REDIS_DB)
    p.add_argument("--minutes", type=float, default=10.0, help="measured minutes")
    p.add_argument("--streams", type=int, default=1000, help="open streams to keep (max 5000)")
    p.add_argument("--rate", type=float, default=50.0, help="blocking sends a second")
    p.add_argument("--sample", type=float, default=10.0, help="seconds between samples")
    p.add_argument("--step", type=float, default=20.0, help="seconds between a task's events")
    p.add_argument("--open-parallel", type=int, default=50, help="streams opening at once")
    p.add_argument("--heartbeat", type=float, default=15.0, help="SSE_HEARTBEAT_SECONDS (own hub)")
    p.add_argument("--tolerance", type=float, default=5.0, help="growth %% still called flat")
    p.add_argument("--seed", type=int, default=1, help="for the tasks' durations")
    p.add_argument("--url", help="a running hub's base URL (then nothing is started)")
    p.add_argument(
        "--hold-agent", default=HOLD_AGENT, help="with --url: the slow agent the streams follow"
    )
    p.add_argument("--database-url", help="with --url: the hub's database, for its connections")
    p.add_argument(
        "--pid", type=int, action="append", default=[], help="with --url: a web process to sample"
    )
    hub.add_run_arguments(p, first_port=8260)
    args = p.parse_args(argv)
    args.streams = max(1, min(args.streams, 5000))
    args.started = dt.datetime.now()
    return args


# -- the streams and the sends --------------------------------------------------------------


def rpc(version: str, method: str, params: dict[str, Any]) -> tuple[dict, dict[str, str]]:
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex[:8], "method": method, "params": params}
    return body, ({"A2A-Version": V1} if version == V1 else {})


def message(version: str, text: str) -> dict[str, Any]:
    mid = f"soak-{uuid.uuid4().hex}"
    if version == V1:
        return {"messageId": mid, "role": "ROLE_USER", "parts": [{"text": text}]}
    return {"kind": "message", "messageId": mid, "role": "user",
            "parts": [{"kind": "text", "text": text}]}  # fmt: skip


METHODS = {
    V1: {"send": "SendMessage", "stream": "SendStreamingMessage", "subscribe": "SubscribeToTask",
         "cancel": "CancelTask"},
    V03: {"send": "message/send", "stream": "message/stream", "subscribe": "tasks/resubscribe",
          "cancel": "tasks/cancel"},
}  # fmt: skip
NON_BLOCKING = {V1: {"returnImmediately": True}, V03: {"blocking": False}}


def task_of(result: dict[str, Any]) -> dict[str, Any]:
    return dict(result.get("task", result))  # 1.0 wraps it, 0.3 has `kind`


@dataclass
class Load:
    """What the client side holds and counts; the window counters are read and reset per
    sample."""

    base: str
    args: argparse.Namespace
    http: Any = None
    streams_http: Any = None
    rng: random.Random = field(default_factory=random.Random)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    opening: asyncio.Semaphore | None = None
    open_now: int = 0
    opened_ever: int = 0
    ended: int = 0
    events: int = 0
    keepalives: int = 0
    stream_errors: list[str] = field(default_factory=list)
    sends_ok: int = 0
    send_errors: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    behind: int = 0  # sends not started because too many were still under way
    live_tasks: set[str] = field(default_factory=set)

    def url(self, slug: str) -> str:
        return f"{self.base}/agents/{slug}/jsonrpc/"

    async def call(self, slug: str, version: str, op: str, params: dict[str, Any]) -> Any:
        body, headers = rpc(version, METHODS[version][op], params)
        response = await self.http.post(self.url(slug), json=body, headers=headers)
        answer = response.json()
        if "error" in answer:
            raise RuntimeError(f"{body['method']}: {answer['error']}")
        return answer["result"]

    # -- streams

    async def hold(self, slot: int) -> None:
        """One stream slot: a stream, then another when it ends, until told to stop."""
        version = V1 if slot % 2 == 0 else V03
        op = "stream" if (slot // 2) % 2 == 0 else "subscribe"
        while not self.stop.is_set():
            try:
                await self.follow(version, op)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.stream_errors.append(f"{version} {op}: {type(exc).__name__}: {exc!r}"[:300])
                await asyncio.sleep(1.0)

    async def follow(self, version: str, op: str) -> None:
        slug = self.args.hold_agent
        text = str(round(self.rng.uniform(MIN_TASK_SECONDS, MAX_TASK_SECONDS)))
        params: dict[str, Any] = {"message": message(version, text)}
        if op == "subscribe":
            params["configuration"] = NON_BLOCKING[version]
            params = {"id": task_of(await self.call(slug, version, "send", params))["id"]}
        body, headers = rpc(version, METHODS[version][op], params)
        assert self.opening is not None
        task_id = ""
        await self.opening.acquire()
        try:
            async with self.streams_http.stream(
                "POST", self.url(slug), json=body, headers=headers
            ) as response:
                if response.status_code != 200:
                    raise RuntimeError(f"HTTP {response.status_code}")
                async for line in response.aiter_lines():
                    if line.startswith(":"):
                        self.keepalives += 1
                    elif line.startswith("data:"):
                        if task_id:
                            self.count(line)
                        else:
                            task_id = self.opened(line)
            if not task_id:
                raise RuntimeError("the stream closed before its first event")
            self.ended += 1
        finally:
            if not task_id:
                self.opening.release()
            else:
                self.open_now -= 1
                self.live_tasks.discard(task_id)

    def opened(self, line: str) -> str:
        """The stream's first event (the Task): it is open; another may start opening."""
        assert self.opening is not None
        self.opening.release()
        self.open_now += 1
        self.opened_ever += 1
        task_id = str(task_of(self.count(line))["id"])
        self.live_tasks.add(task_id)
        return task_id

    def count(self, line: str) -> dict[str, Any]:
        frame = json.loads(line[5:])
        if "error" in frame:
            raise RuntimeError(f"stream error: {frame['error']}")
        self.events += 1
        return dict(frame["result"])

    # -- steady sends

    async def send_steadily(self) -> None:
        """Open loop: one send every 1/rate s, whatever the answers' latency."""
        pending: set[asyncio.Task[None]] = set()
        interval = 1.0 / self.args.rate
        next_at = time.monotonic()
        for n in itertools.count():
            if self.stop.is_set():
                break
            if len(pending) >= 500:
                self.behind += 1
            else:
                job = asyncio.create_task(self.send_one(V1 if n % 2 == 0 else V03))
                pending.add(job)
                job.add_done_callback(pending.discard)
            next_at += interval
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        await asyncio.gather(*pending, return_exceptions=True)

    async def send_one(self, version: str) -> None:
        started = time.perf_counter()
        try:
            result = await self.call(
                SEND_AGENT, version, "send", {"message": message(version, "soak")}
            )
            state = task_of(result)["status"]["state"]
            if state not in ("completed", "TASK_STATE_COMPLETED"):
                raise RuntimeError(f"ended {state}")
            self.sends_ok += 1
            self.latencies.append(time.perf_counter() - started)
        except Exception as exc:
            self.send_errors.append(f"{type(exc).__name__}: {exc}"[:300])


# -- what the hub holds ---------------------------------------------------------------------


def sockets_of(pid: int) -> int:
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            count += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
    return count


def tcp_rows() -> list[list[str]]:
    rows = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            rows += [line.split() for line in Path(name).read_text().splitlines()[1:]]
    return rows


def established_on(port: int) -> int:
    """Server-side connections of the port that are open (TCP state 01)."""
    return sum(1 for r in tcp_rows() if int(r[1].rsplit(":", 1)[1], 16) == port and r[3] == "01")


def listening_pids(port: int) -> list[int]:
    """The processes holding the listening socket of a local port."""
    inodes = {r[9] for r in tcp_rows() if int(r[1].rsplit(":", 1)[1], 16) == port and r[3] == "0A"}
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            links = {
                os.readlink(f"/proc/{entry}/fd/{fd}") for fd in os.listdir(f"/proc/{entry}/fd")
            }
            if any(f"socket:[{inode}]" in links for inode in inodes):
                found.append(int(entry))
    return found


def pg_connections(database_url: str) -> int:
    import psycopg

    url = database_url.replace("postgres://", "postgresql://", 1)
    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchone()
    return int(row[0]) if row else 0


def redis_clients(redis_url: str) -> int:
    """Clients of the hub's Redis database (this sampler's own connection left out)."""
    import redis

    client = redis.Redis.from_url(redis_url, socket_timeout=5)
    try:
        db = client.connection_pool.connection_kwargs.get("db", 0)
        return sum(1 for c in client.client_list() if int(c.get("db", -1)) == db) - 1
    finally:
        client.close()


@dataclass
class Target:
    """Where the hub is and what to sample of it."""

    base: str
    port: int
    database_url: str
    redis_url: str
    web_pids: list[int]
    worker_pid: int = 0


def measure(target: Target, started: float) -> dict[str, Any]:
    row: dict[str, Any] = {"t": round(time.monotonic() - started)}
    for index, pid in enumerate(target.web_pids):
        memory = proc_memory(pid)
        row[f"web{index}_rss"] = memory["VmRSS"] / 1024
        row[f"web{index}_fds"] = memory["fds"]
        row[f"web{index}_sockets"] = sockets_of(pid)
        row[f"web{index}_threads"] = memory["Threads"]
    if target.worker_pid:
        row["worker_rss"] = proc_memory(target.worker_pid)["VmRSS"] / 1024
    row["established"] = established_on(target.port)
    row["pg"] = pg_connections(target.database_url)
    row["redis"] = redis_clients(target.redis_url)
    return row


def window(load: Load) -> dict[str, Any]:
    """The client's counts since the last sample (and resets them)."""
    latencies = sorted(load.latencies)
    row = {
        "streams": load.open_now, "events": load.events, "sends": load.sends_ok,
        "send_errors": len(load.send_errors), "stream_errors": len(load.stream_errors),
        "p50_ms": percentile(latencies, 0.5), "p99_ms": percentile(latencies, 0.99),
    }  # fmt: skip
    load.latencies.clear()
    load.events = load.sends_ok = 0
    return row


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return round(values[min(len(values) - 1, int(len(values) * q))] * 1000, 1)


# -- the run ---------------------------------------------------------------------------------


async def wait_until(predicate: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    return bool(predicate())


async def soak(target: Target, args: argparse.Namespace) -> dict[str, Any]:
    import httpx

    load = Load(target.base, args, rng=random.Random(args.seed))
    load.opening = asyncio.Semaphore(args.open_parallel)
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=200)
    async with (
        httpx.AsyncClient(timeout=60, limits=limits) as load.http,
        httpx.AsyncClient(timeout=httpx.Timeout(60, read=None), limits=limits) as load.streams_http,
    ):
        t0 = time.monotonic()
        slots = [asyncio.create_task(load.hold(i)) for i in range(args.streams)]
        opened = await wait_until(lambda: load.open_now >= args.streams, 300)
        open_s = round(time.monotonic() - t0, 1)
        print(f"  {load.open_now} of {args.streams} streams open after {open_s} s")
        sender = asyncio.create_task(load.send_steadily())
        samples = await sample_for(target, load, args)
        load.stop.set()
        for slot in slots:
            slot.cancel()
        await asyncio.gather(*slots, return_exceptions=True)
        await sender
        canceled = await cancel_all(load) if args.url else 0
    return {"samples": samples, "open_s": open_s, "opened": opened, "load": load,
            "canceled": canceled}  # fmt: skip


async def sample_for(target: Target, load: Load, args: argparse.Namespace) -> list[dict[str, Any]]:
    started = time.monotonic()
    window(load)  # the opening's counts are not the soak's
    samples = []
    end = started + args.minutes * 60
    next_at = started + args.sample
    while next_at <= end + 0.01:
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        row = await asyncio.to_thread(measure, target, started) | window(load)
        samples.append(row)
        print("  " + "  ".join(f"{k}={fmt(v)}" for k, v in row.items()), flush=True)
        next_at += args.sample
    return samples


async def cancel_all(load: Load) -> int:
    """A hub we did not start keeps running: its slow tasks would go on for minutes."""
    gate = asyncio.Semaphore(16)

    async def cancel(task_id: str) -> bool:
        async with gate:
            with contextlib.suppress(Exception):
                await load.call(load.args.hold_agent, V1, "cancel", {"id": task_id})
                return True
        return False

    return sum(await asyncio.gather(*(cancel(t) for t in load.live_tasks)))


def start_hub(bench: hub.Bench) -> Target:
    args = bench.args
    port = next(p for p in range(args.port, args.port + 50) if hub.port_free(p))
    database_url = hub.create_database(bench, f"a2asoak_{bench.tag}").replace(
        "postgresql://", "postgres://"
    )
    hub.flush_redis(bench)
    env = hub.hub_env(database_url, args.redis, bench.logs / "data")
    env["SSE_HEARTBEAT_SECONDS"] = str(args.heartbeat)
    print("== preparing the hub (migrate, seed, soak agent)")
    hub.prepare_hub(bench, env)
    script = AGENTS.replace("STEP", repr(args.step)).replace("SLUG", repr(args.hold_agent))
    done = subprocess.run([hub.python(), "manage.py", "shell", "-c", script], cwd=hub.REPO,
                          env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"creating the soak agent failed:\n{done.stdout}\n{done.stderr}")
    print("  " + done.stdout.strip())
    worker_pid = hub.start_celery(bench, env)
    web_pid = bench.start("hub-daphne", hub.hub_web_command("hub-daphne", port), env, hub.REPO)
    base = f"http://127.0.0.1:{port}"
    hub.wait_http(bench, "hub-daphne", f"{base}/agents/echo/.well-known/agent-card.json")
    return Target(base, port, database_url, args.redis, [web_pid], worker_pid)


def given_hub(args: argparse.Namespace) -> Target:
    if not args.database_url:
        raise SystemExit("--url needs --database-url (the hub's PostgreSQL database)")
    base = args.url.rstrip("/")
    port = urlsplit(base).port or 80
    pids = args.pid or listening_pids(port)
    if not pids:
        raise SystemExit(f"no process listens on port {port} here; name the web ones with --pid")
    return Target(base, port, args.database_url, args.redis, pids)


# -- the report ------------------------------------------------------------------------------

FLAT_METRICS = ("rss", "fds", "sockets", "threads", "worker_rss", "established", "pg", "redis")


def fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def flatness(samples: list[dict[str, Any]], tolerance: float) -> list[tuple[str, Any, Any, str]]:
    """(metric, first third's mean, last third's mean, verdict) of each resource."""
    third = max(1, len(samples) // 3)
    first, last = samples[:third], samples[-third:]
    rows = []
    for key in [k for k in samples[0] if k.endswith(FLAT_METRICS)]:
        a = statistics.fmean(s[key] for s in first)
        b = statistics.fmean(s[key] for s in last)
        growth = (b - a) / a * 100 if a else 0.0
        # Counts of a few connections move by one or two for no reason worth a verdict.
        flat = growth <= tolerance or (not key.endswith("rss") and b - a <= 2)
        rows.append((key, a, b, f"{growth:+.1f}% {'flat' if flat else 'GROWS'}"))
    return rows


def report(target: Target, args: argparse.Namespace, result: dict[str, Any]) -> str:
    samples, load = result["samples"], result["load"]
    keys = list(samples[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(fmt(s[k]) for k in keys) + " |" for s in samples]
    flat = flatness(samples, args.tolerance)
    verdicts = ["| resource | first third | last third | growth |", "|---|---|---|---|"]
    verdicts += [f"| {k} | {a:.1f} | {b:.1f} | {v} |" for k, a, b, v in flat]
    sends = sum(s["sends"] for s in samples)
    summary = (
        f"{args.streams} streams asked for; {result['open_s']} s to open them; between "
        f"{min(s['streams'] for s in samples)} and {max(s['streams'] for s in samples)} open "
        f"at each sample; {load.opened_ever} opened in all, {load.ended} ended with their task "
        f"and were replaced; {len(load.stream_errors)} stream errors. Sends: {sends} completed "
        f"({sends / (args.minutes * 60):.1f}/s for {args.rate:g}/s asked), "
        f"{len(load.send_errors)} errors, {load.behind} not started (too many under way). "
        f"Every resource flat: {'YES' if all('flat' in v for *_, v in flat) else 'NO'}."
    )
    errors = (load.stream_errors[:3] + load.send_errors[:3]) or ["none"]
    return "\n\n".join([
        f"Run: {environment(target, args)}", "Samples (RSS in MiB; streams open, events, "
        "sends and latencies per sample window):", "\n".join(lines),
        f"Flat? The last third of the samples against the first (tolerance {args.tolerance:g} %):",
        "\n".join(verdicts), summary, "First errors: " + "; ".join(errors),
    ])  # fmt: skip


def environment(target: Target, args: argparse.Namespace) -> str:
    where = f"the hub at {args.url}" if args.url else "a hub started here (one daphne, one worker)"
    return (f"from {args.started.isoformat(timespec='minutes')}, {os.cpu_count()} cores, "
            f"Python {sys.version.split()[0]}; {where}; {args.minutes:g} min, {args.streams} "
            f"streams (slow agent, an event every {args.step:g} s, tasks of "
            f"{MIN_TASK_SECONDS}-{MAX_TASK_SECONDS} s), {args.rate:g} sends/s to {SEND_AGENT}, "
            f"a sample every {args.sample:g} s")  # fmt: skip


def healthy(result: dict[str, Any], args: argparse.Namespace) -> bool:
    load, samples = result["load"], result["samples"]
    flat = all("flat" in v for *_, v in flatness(samples, args.tolerance))
    held = min(s["streams"] for s in samples) >= 0.95 * args.streams
    return flat and held and not load.send_errors and result["opened"]


# -- main ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if raise_fd_limit() < args.streams + 500:
        raise SystemExit(f"the open-file limit is too low for {args.streams} streams")
    with hub.bench_session(args, "a2ahub-soak-", False) as bench:
        target = given_hub(args) if args.url else start_hub(bench)
        print(f"\n== {args.streams} streams and {args.rate:g} sends/s for {args.minutes:g} min")
        result = asyncio.run(soak(target, args))
        for name in bench.processes:
            bench.check_alive(name)
    text = report(target, args, result)
    print(f"\n{text}")
    if args.markdown:
        args.markdown.write_text(f"# Soak\n\n{text}\n")
    return 0 if healthy(result, args) else 1


if __name__ == "__main__":
    sys.exit(main())
