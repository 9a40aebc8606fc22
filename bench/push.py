"""Push notifications: deliveries per second of one Celery worker, and the latency from a
task's state change to the webhook's arrival.

It starts the hub in distributed mode with bench/run.py's machinery (PostgreSQL, Redis, one
Celery worker, daphne) with OUTBOUND_ALLOWED_HOSTS=127.0.0.1, a webhook receiver in this process
(aiohttp on 127.0.0.1: records the arrival time of each `webhook-id`, answers 200), and a
`bench-push` agent (echo executor, push notifications on). It then sends tasks, each with an
inline push config pointing at the receiver (1.0 `SendMessage` with
`configuration.taskPushNotificationConfig`, or 0.3 `message/send` with
`configuration.pushNotificationConfig`), in two phases:

- burst: N tasks at concurrency c, faster than one worker delivers: the worker's throughput
  (delivered Delivery rows / time, and the receiver's count) with a backlog;
- paced: M tasks one at a time with a pause between them: latency without a backlog;
- backlog: the worker is stopped (SIGSTOP) while B tasks are sent, then resumed (SIGCONT): the
  engine's own rate, draining a backlog (fast deliveries / resume to last arrival), which the
  burst cannot show when the web process sends more slowly than the worker delivers;
- backlog + slow receiver: the same, with K tasks sent first to a receiver that answers each
  request after 5 s (`--slow-seconds`): the rate to the fast receiver while the slow queues
  are in flight, against the backlog phase's.

Latency is the receiver's arrival time minus the `TaskEvent.created_at` of the delivered
event (both clocks are this machine's).

With `--send-ratio` it measures instead what a webhook costs the sender, on the seeded `tck`
agent (`--agent`; its messageIds name the scenario that completes the task), closed loop at
`--ratio-c` (16) as bench/bindings.py's client: plain blocking `SendMessage` (no config), then
non-blocking (`returnImmediately`; 0.3 `blocking: false`) sends each carrying a push config to
the receiver, which runs in a process of its own so that its work is not the client's. It
prints the non-blocking rate over the blocking one and the delay from the last send's answer
until every delivery of every task sent has arrived (each task ended, no delivery pending).
`--rounds` repeats the pair, the order swapped each round.

    python bench/push.py                        # from the repository root; about 1.5 minutes
    python bench/push.py --send-ratio --no-pin  # about a minute; the webhook send / blocking
    python bench/push.py -n 300 -c 8 --protocol 0.3 --markdown out.md
    python bench/push.py --backlog 1000 --slow 20   # the engine's rate, with slow receivers
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as hub

AGENT = "bench-push"
AGENTS = f"""
from agents.models import Agent, Skill
agent, _ = Agent.objects.update_or_create(slug="{AGENT}", defaults=dict(
    name="{AGENT}", description="bench agent", executor_kind="echo", execution_mode="inline",
    push_notifications=True, streaming=True))
Skill.objects.get_or_create(agent=agent, skill_id="echo", defaults=dict(
    name="Echo", description="echo", tags=["bench"], position=0))
print("bench agent:", agent.slug, agent.executor_kind, "push", agent.push_notifications)
"""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    hub.add_service_arguments(p, redis_db=8)
    p.add_argument("-n", "--tasks", type=int, default=300, help="tasks in the burst (max 5000)")
    p.add_argument("-c", "--concurrency", type=int, default=8, help="senders in the burst")
    p.add_argument("--paced", type=int, default=40, help="tasks sent one by one (max 1000)")
    p.add_argument("--pause", type=float, default=0.25, help="seconds between paced tasks")
    p.add_argument(
        "--backlog",
        type=int,
        default=1000,
        help="tasks sent while the worker is stopped (0: no backlog phases)",
    )
    p.add_argument(
        "--slow",
        type=int,
        default=20,
        help="tasks to the slow receiver in the last phase (0: no such phase)",
    )
    p.add_argument(
        "--slow-seconds",
        type=float,
        default=5.0,
        help="how long the slow receiver takes to answer each request",
    )
    p.add_argument("--protocol", choices=("1.0", "0.3"), default="1.0")
    p.add_argument(
        "--send-ratio",
        action="store_true",
        help="measure non-blocking sends with a webhook against plain blocking sends instead",
    )
    p.add_argument("--agent", default="tck", help="the agent --send-ratio sends to")
    p.add_argument("--ratio-c", type=int, default=16, help="--send-ratio's concurrent clients")
    p.add_argument("-d", "--duration", type=float, default=6.0, help="--send-ratio: measured s")
    p.add_argument("--warmup", type=float, default=2.0, help="--send-ratio: unmeasured s first")
    p.add_argument("--rounds", type=int, default=1, help="--send-ratio: pairs of runs")
    p.add_argument("--timeout", type=float, default=30.0, help="--send-ratio: per request, s")
    p.add_argument("--server", choices=("hub-daphne", "hub-uvicorn"), default="hub-daphne")
    p.add_argument(
        "--celery-concurrency",
        type=int,
        default=4,
        help="threads of the one Celery worker (run.py's default: 4)",
    )
    p.add_argument(
        "--drain-timeout",
        type=float,
        default=180.0,
        help="most seconds to wait for a phase's deliveries",
    )
    p.add_argument(
        "--no-commit-wait",
        action="store_true",
        help="the bench database commits without waiting for the disk (synchronous_commit off):"
        " what the hub's CPU allows, apart from how fast this machine's disk flushes",
    )
    hub.add_run_arguments(p, first_port=8230)
    args = p.parse_args(argv)
    args.tasks = max(1, min(args.tasks, 5000))
    args.paced = max(0, min(args.paced, 1000))
    args.backlog = max(0, min(args.backlog, 10000))
    args.slow = max(0, min(args.slow, 500))
    args.concurrency = max(1, min(args.concurrency, 256))
    return args


# -- the receiver --------------------------------------------------------------------------


class Receiver:
    """Answers 200 to every POST and keeps the first arrival (wall clock) of each webhook-id."""

    def __init__(self, slow_seconds: float = 5.0) -> None:
        self.arrivals: dict[str, float] = {}
        self.posts = 0
        self.runner: Any = None
        self.slow_seconds = slow_seconds
        self.slow_arrivals: list[float] = []

    async def slow_hook(self, request: Any) -> Any:
        """The slow receiver: each request is answered `slow_seconds` after it arrives."""
        from aiohttp import web

        self.slow_arrivals.append(time.time())
        await request.read()
        await asyncio.sleep(self.slow_seconds)
        return web.Response(text="ok")

    async def hook(self, request: Any) -> Any:
        from aiohttp import web

        now = time.time()
        await request.read()
        self.posts += 1
        self.arrivals.setdefault(request.headers.get("webhook-id", f"none-{self.posts}"), now)
        return web.Response(text="ok")

    async def arrived(self, request: Any) -> Any:
        """What a receiver in another process has seen: {webhook-id: arrival}."""
        from aiohttp import web

        return web.json_response(self.arrivals)

    async def start(self, port: int) -> None:
        from aiohttp import web

        app = web.Application()
        app.router.add_post("/hook", self.hook)
        app.router.add_post("/slow", self.slow_hook)
        app.router.add_get("/arrivals", self.arrived)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", port).start()

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


# -- sending -------------------------------------------------------------------------------


def send_body(protocol: str, rid: int, hook_url: str) -> tuple[dict, dict[str, str]]:
    mid = f"push-{uuid.uuid4().hex}"
    token = uuid.uuid4().hex
    if protocol == "1.0":
        message = {"messageId": mid, "role": "ROLE_USER", "parts": [{"text": "hello"}]}
        configuration = {"taskPushNotificationConfig": {"url": hook_url, "token": token}}
        method, headers = "SendMessage", {"A2A-Version": "1.0"}
    else:
        message = {"kind": "message", "messageId": mid, "role": "user",
                   "parts": [{"kind": "text", "text": "hello"}]}  # fmt: skip
        configuration = {"pushNotificationConfig": {"url": hook_url, "token": token}}
        method, headers = "message/send", {}
    body = {"jsonrpc": "2.0", "id": rid, "method": method,
            "params": {"message": message, "configuration": configuration}}  # fmt: skip
    return body, headers


async def send_tasks(session: Any, url: str, hook_url: str, protocol: str, n: int, c: int,
                     pause: float = 0.0) -> tuple[list[str], list[str]]:  # fmt: skip
    task_ids: list[str] = []
    errors: list[str] = []
    counter = iter(range(n))

    async def sender() -> None:
        for rid in counter:
            body, headers = send_body(protocol, rid, hook_url)
            try:
                async with session.post(url, json=body, headers=headers) as response:
                    data = await response.json(content_type=None)
                result = data.get("result") or {}
                task = result.get("task", result) if protocol == "1.0" else result
                if "error" in data or not task.get("id"):
                    raise RuntimeError(str(data.get("error") or data)[:300])
                task_ids.append(task["id"])
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}"[:300])
            if pause:
                await asyncio.sleep(pause)

    await asyncio.gather(*(sender() for _ in range(c)))
    return task_ids, errors


# -- the database --------------------------------------------------------------------------


DELIVERIES = """
SELECT d.id::text, d.state, extract(epoch FROM e.created_at), extract(epoch FROM d.delivered_at),
       d.attempts, e.kind,
       (SELECT extract(epoch FROM max(a.started_at)) FROM push_deliveryattempt a
         WHERE a.delivery_id = d.id)
  FROM push_delivery d
  JOIN push_pushnotificationconfig c ON c.id = d.config_id
  JOIN tasks_taskevent e ON e.id = d.event_id
 WHERE c.task_id = ANY(%s::uuid[])
"""


def deliveries(dsn: str, task_ids: list[str]) -> list[tuple]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(DELIVERIES, [task_ids]).fetchall()  # type: ignore[arg-type]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- one phase -----------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def phase(name: str, ctx: dict[str, Any], n: int, c: int, pause: float) -> dict[str, Any]:
    import aiohttp

    args, receiver = ctx["args"], ctx["receiver"]
    cpu0 = {k: cpu_seconds(pid) for k, pid in ctx["pids"].items()}
    started = time.time()
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        task_ids, errors = await send_tasks(session, ctx["url"], ctx["hook"], args.protocol,
                                            n, c, pause)  # fmt: skip
    sent = time.time()
    print(f"  {name}: {len(task_ids)} tasks sent in {sent - started:.1f} s "
          f"({len(errors)} errors)")  # fmt: skip
    rows: list[tuple] = []
    deadline = time.monotonic() + args.drain_timeout
    while time.monotonic() < deadline:
        rows = await asyncio.to_thread(deliveries, ctx["dsn"], task_ids)
        pending = sum(1 for r in rows if r[1] == "pending")
        if rows and not pending and all(r[0] in receiver.arrivals for r in rows
                                        if r[1] == "delivered"):  # fmt: skip
            break
        await asyncio.sleep(0.25)
    cpu1 = {k: cpu_seconds(pid) for k, pid in ctx["pids"].items()}
    delivered = [r for r in rows if r[1] == "delivered"]
    arrived = [receiver.arrivals[r[0]] for r in delivered if r[0] in receiver.arrivals]
    latencies = [(receiver.arrivals[r[0]] - float(r[2])) * 1000 for r in delivered
                 if r[0] in receiver.arrivals]  # fmt: skip
    first_event = min((float(r[2]) for r in rows), default=started)
    last_arrival = max(arrived, default=time.time())
    window = max(last_arrival - first_event, 1e-9)
    kinds: dict[str, int] = {}
    by_kind: dict[str, list[float]] = {}
    started_after: list[float] = []
    for r in rows:
        kinds[r[5]] = kinds.get(r[5], 0) + 1
        if r[1] == "delivered" and r[0] in receiver.arrivals:
            by_kind.setdefault(r[5], []).append((receiver.arrivals[r[0]] - float(r[2])) * 1000)
            if r[6] is not None:  # when the attempt that delivered it started
                started_after.append((float(r[6]) - float(r[2])) * 1000)
    result = {
        "phase": name, "tasks": len(task_ids), "send_errors": len(errors),
        "error_examples": errors[:3], "c": c, "send_s": sent - started,
        "p50_by_kind": {k: percentile(v, 0.5) for k, v in by_kind.items()},
        "start_p50": percentile(started_after, 0.5),
        "deliveries": len(rows), "delivered": len(delivered),
        "pending": sum(1 for r in rows if r[1] == "pending"),
        "abandoned": sum(1 for r in rows if r[1] == "abandoned"),
        "retried": sum(1 for r in rows if r[4] > 1), "received": len(arrived),
        "window_s": window, "per_s": len(delivered) / window,
        "received_per_s": len(arrived) / window,
        "p50": percentile(latencies, 0.5), "p90": percentile(latencies, 0.9),
        "p99": percentile(latencies, 0.99), "max": max(latencies, default=None),
        "kinds": kinds,
        "cpu_ms": {k: (cpu1[k] - cpu0[k]) * 1000 / max(len(delivered), 1) for k in cpu0},
    }  # fmt: skip
    print(f"  {name}: {len(delivered)} of {len(rows)} deliveries delivered, {len(arrived)} "
          f"received, {result['per_s']:.1f}/s, latency p50 {fmt(result['p50'])} ms "
          f"p99 {fmt(result['p99'])} ms")  # fmt: skip
    return result


async def backlog_phase(name: str, ctx: dict[str, Any], n: int, c: int,
                        slow: int) -> dict[str, Any]:  # fmt: skip
    """Deliveries of `n` tasks sent while the worker is stopped, counted from its resumption
    to the last arrival; `slow` tasks to the slow receiver are sent first, so their queues are
    claimed first and stay in flight while the fast ones drain."""
    import aiohttp

    args, receiver, worker = ctx["args"], ctx["receiver"], ctx["pids"]["celery"]
    slow_hook = ctx["hook"].replace("/hook", "/slow")
    slow_before = len(receiver.slow_arrivals)
    os.kill(worker, signal.SIGSTOP)
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
            if slow:
                await send_tasks(session, ctx["url"], slow_hook, args.protocol, slow, min(c, slow))
            task_ids, errors = await send_tasks(session, ctx["url"], ctx["hook"], args.protocol,
                                                n, c)  # fmt: skip
        await asyncio.sleep(1.0)  # every commit, and its wake-up, made before the worker runs
    finally:
        cpu0 = cpu_seconds(worker)
        resumed = time.time()
        os.kill(worker, signal.SIGCONT)
    print(f"  {name}: {len(task_ids)} tasks sent while the worker was stopped "
          f"({len(errors)} errors); resumed")  # fmt: skip
    rows: list[tuple] = []
    deadline = time.monotonic() + args.drain_timeout
    while time.monotonic() < deadline:
        rows = await asyncio.to_thread(deliveries, ctx["dsn"], task_ids)
        if rows and all(r[1] == "delivered" and r[0] in receiver.arrivals for r in rows):
            break
        await asyncio.sleep(0.1)
    cpu1 = cpu_seconds(worker)
    delivered = [r for r in rows if r[1] == "delivered"]
    arrived = [receiver.arrivals[r[0]] for r in delivered if r[0] in receiver.arrivals]
    last = max(arrived, default=time.time())
    window = max(last - resumed, 1e-9)
    slow_during = [t for t in receiver.slow_arrivals[slow_before:] if t <= last]
    kinds: dict[str, int] = {}
    for r in rows:
        kinds[r[5]] = kinds.get(r[5], 0) + 1
    result = {
        "phase": name, "tasks": len(task_ids), "send_errors": len(errors),
        "error_examples": errors[:3], "c": c, "send_s": 0.0, "deliveries": len(rows),
        "delivered": len(delivered), "pending": sum(1 for r in rows if r[1] == "pending"),
        "abandoned": sum(1 for r in rows if r[1] == "abandoned"),
        "retried": sum(1 for r in rows if r[4] > 1), "received": len(arrived),
        "window_s": window, "per_s": len(delivered) / window,
        "received_per_s": len(arrived) / window, "p50": None, "p90": None, "p99": None,
        "max": None, "kinds": kinds, "slow_tasks": slow, "slow_in_flight": len(slow_during),
        "slow_seconds": args.slow_seconds,
        "cpu_ms": {"celery": (cpu1 - cpu0) * 1000 / max(len(delivered), 1), "web": 0.0},
    }  # fmt: skip
    print(f"  {name}: {len(delivered)} of {len(rows)} delivered in {window:.2f} s after the "
          f"worker resumed: {result['per_s']:.0f}/s"
          + (f"; {len(slow_during)} requests reached the slow receiver meanwhile" if slow
             else ""))  # fmt: skip
    return result


async def drive(ctx: dict[str, Any]) -> list[dict[str, Any]]:
    args = ctx["args"]
    receiver: Receiver = ctx["receiver"]
    await receiver.start(ctx["hook_port"])
    try:
        # Warm-up: a few tasks so first-use costs (imports, signing key, pools) are not counted.
        await phase("warm-up", ctx, 5, 1, 0.0)
        results = [await phase("burst", ctx, args.tasks, args.concurrency, 0.0)]
        if args.paced:
            results.append(await phase("paced", ctx, args.paced, 1, args.pause))
        if args.backlog:
            results.append(await backlog_phase("backlog", ctx, args.backlog, args.concurrency, 0))
            if args.slow:
                results.append(await backlog_phase(
                    f"backlog + {args.slow} slow", ctx, args.backlog, args.concurrency, args.slow
                ))  # fmt: skip
        return results
    finally:
        await receiver.stop()


# -- the send ratio: what a webhook costs the sender ---------------------------------------


def serve_receiver(port: int) -> None:
    """The receiver's own process (--send-ratio): its work is not the client's."""

    async def serve() -> None:
        await Receiver().start(port)
        await asyncio.Event().wait()

    asyncio.run(serve())


class RatioClient:
    """One kind of send for bindings.closed_loop: plain blocking sends, checked as
    a2a_load.py checks them (a completed task), or non-blocking sends with a push config,
    which must answer with a task; the ids of those are kept, and when the last answer came."""

    def __init__(self, load: Any, url: str, protocol: str, hook: str | None) -> None:
        self.load, self.url, self.protocol, self.hook = load, url, protocol, hook
        self.task_ids: list[str] = []
        self.last_answer = 0.0
        self.tag = uuid.uuid4().hex[:8]

    def body(self, rid: int) -> tuple[bytes, dict[str, str]]:
        # The conformance agent runs the scenario its messageId names: this one completes.
        mid = f"tck-complete-task-{self.tag}{rid:x}"
        configuration: dict[str, Any] = {}
        if self.protocol == "1.0":
            message = {"messageId": mid, "role": "ROLE_USER", "parts": [{"text": "hello"}]}
            if self.hook:
                configuration = {
                    "returnImmediately": True,
                    "taskPushNotificationConfig": {"url": self.hook, "token": mid},
                }
            method, headers = "SendMessage", {"A2A-Version": "1.0"}
        else:
            message = {
                "kind": "message",
                "messageId": mid,
                "role": "user",
                "parts": [{"kind": "text", "text": "hello"}],
            }
            if self.hook:
                configuration = {
                    "blocking": False,
                    "pushNotificationConfig": {"url": self.hook, "token": mid},
                }
            method, headers = "message/send", {}
        params: dict[str, Any] = {"message": message}
        if configuration:
            params["configuration"] = configuration
        body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        headers["Content-Type"] = "application/json"
        return json.dumps(body).encode(), headers

    async def one(self, session: Any, rid: int) -> tuple[float, float]:
        body, headers = self.body(rid)
        started = time.perf_counter()
        async with session.post(self.url, data=body, headers=headers) as response:
            raw = await response.read()
        took = time.perf_counter() - started
        if response.status != 200:
            raise self.load.Invalid(f"http-{response.status}", raw[:300].decode(errors="replace"))
        try:
            result = self.load.envelope(json.loads(raw), rid)
        except ValueError:
            raise self.load.Invalid("bad-json", raw[:200].decode(errors="replace")) from None
        if self.hook is None:
            self.load.check_send(result, self.protocol)
        else:
            task = result if self.protocol == "0.3" else result.get("task")
            self.load.task_state(task, self.protocol)  # a task, whatever its state
            self.task_ids.append(task["id"])
            self.last_answer = time.time()
        return took, took


UNFINISHED = """
SELECT count(*) FROM tasks_task
 WHERE id = ANY(%s::uuid[]) AND state NOT IN ('completed', 'failed', 'canceled', 'rejected')
"""


def unfinished(dsn: str, task_ids: list[str]) -> int:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(UNFINISHED, [task_ids]).fetchone()  # type: ignore[arg-type]
        return int(row[0]) if row else 0


async def arrivals(session: Any, hook_base: str) -> dict[str, float]:
    async with session.get(f"{hook_base}/arrivals") as response:
        found: dict[str, float] = await response.json()
        return found


async def drain(ctx: dict[str, Any], client: RatioClient) -> dict[str, Any]:
    """Wait until every task sent has ended and each of its deliveries has arrived; the lag is
    the last arrival after the last send's answer."""
    import aiohttp

    args, ids = ctx["args"], client.task_ids
    deadline = time.monotonic() + args.drain_timeout
    rows: list[tuple] = []
    seen: dict[str, float] = {}
    done = False
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            left = await asyncio.to_thread(unfinished, ctx["dsn"], ids)
            rows = await asyncio.to_thread(deliveries, ctx["dsn"], ids)
            seen = await arrivals(session, ctx["hook_base"])
            if not left and rows and all(r[1] == "delivered" and r[0] in seen for r in rows):
                done = True
                break
            await asyncio.sleep(0.1)
    ours = [seen[r[0]] for r in rows if r[0] in seen]
    kinds: dict[str, int] = {}
    for r in rows:
        kinds[r[5]] = kinds.get(r[5], 0) + 1
    return {
        "tasks": len(ids), "deliveries": len(rows), "received": len(ours), "done": done,
        "lag_s": (max(ours) - client.last_answer) if ours else None, "kinds": kinds,
        "pending": sum(1 for r in rows if r[1] == "pending"),
    }  # fmt: skip


async def send_ratio(ctx: dict[str, Any]) -> list[dict[str, Any]]:
    """Rounds of (blocking, non-blocking with a webhook), the order swapped each round."""
    import bindings

    args = ctx["args"]
    load = bindings.load_generator(args.shared)
    rows = []
    for number in range(1, args.rounds + 1):
        kinds = ("blocking", "webhook") if number % 2 else ("webhook", "blocking")
        row: dict[str, Any] = {"round": number}
        for kind in kinds:
            hook = ctx["hook"] if kind == "webhook" else None
            client = RatioClient(load, ctx["url"], args.protocol, hook)
            print(f"  round {number}: {kind}, c={args.ratio_c}")
            row[kind] = await bindings.closed_loop(
                client,
                args,
                args.ratio_c,
                [ctx["pids"]["web"], ctx["pids"]["celery"]],
                counters=lambda: database_counters(ctx["dsn"]),
            )
            if hook:
                row["drain"] = await drain(ctx, client)
        blocking, webhook = row["blocking"]["rps"], row["webhook"]["rps"]
        row["ratio"] = webhook / blocking if blocking else None
        print(f"  round {number}: {ratio_line(row)}")
        rows.append(row)
    return rows


DATABASE_COUNTERS = """
SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
       (SELECT wal_sync FROM pg_stat_wal)
"""


def database_counters(dsn: str) -> dict[str, float]:
    """The bench database's commits and the server's WAL flushes: whether a run was bound by
    the disk (every commit waits for a flush) rather than by the hub's CPU."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        commits, flushes = conn.execute(DATABASE_COUNTERS).fetchone()  # type: ignore[misc]
    return {"commits": float(commits), "wal_flushes": float(flushes)}


def commits_and_flushes(measured: dict[str, Any], args: argparse.Namespace) -> str:
    counted, ok = measured.get("counted") or {}, measured["ok"]
    if not counted or not ok:
        return "-"
    return (f"{counted['commits'] / ok:.2f}, "
            f"{counted['wal_flushes'] / args.duration:.0f}")  # fmt: skip


def split(measured: dict[str, Any]) -> str:
    web, server = measured.get("web_ms"), measured.get("server_ms")
    if web is None or server is None:
        return "-"
    return f"{web:.2f} + {server - web:.2f}"


def ratio_line(row: dict[str, Any]) -> str:
    b, w, d = row["blocking"], row["webhook"], row["drain"]
    return (f"blocking {b['rps']:.1f}/s ({b['errors']} errors), non-blocking with a webhook "
            f"{w['rps']:.1f}/s ({w['errors']} errors): {fmt(row['ratio'], 2)}x; "
            f"{d['received']} of {d['deliveries']} deliveries of {d['tasks']} tasks arrived, "
            f"the last {fmt(d['lag_s'], 2)} s after the last send's answer"
            + ("" if d["done"] else " (NOT ALL: drain timed out)"))  # fmt: skip


def ratio_table(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = ["| round | blocking req/s | webhook req/s | ratio | p50 ms blocking / webhook "
             "| server CPU ms/req blocking / webhook (web + worker) "
             "| PG CPU ms/req blocking / webhook "
             "| commits a send, WAL flushes/s blocking / webhook "
             "| deliveries (per task) | all arrived | lag after last send s |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        b, w, d = r["blocking"], r["webhook"], r["drain"]
        per_task = d["deliveries"] / d["tasks"] if d["tasks"] else 0
        lines.append(
            f"| {r['round']} | {b['rps']:.1f} | {w['rps']:.1f} | {fmt(r['ratio'], 2)}x "
            f"| {fmt(b['end'].get('p50_ms'))} / {fmt(w['end'].get('p50_ms'))} "
            f"| {fmt(b['server_ms'], 2)} / {fmt(w['server_ms'], 2)} ({split(w)}) "
            f"| {fmt(b['pg_ms'], 2)} / {fmt(w['pg_ms'], 2)} "
            f"| {commits_and_flushes(b, args)} / {commits_and_flushes(w, args)} "
            f"| {d['deliveries']} ({per_task:.1f}) | {'yes' if d['done'] else 'NO'} "
            f"| {fmt(d['lag_s'], 2)} |"
        )
    return "\n".join(lines)


def ratio_verdict(rows: list[dict[str, Any]]) -> str:
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
    lags = [r["drain"]["lag_s"] for r in rows if r["drain"]["lag_s"] is not None]
    met = all(
        r["ratio"] is not None and r["ratio"] >= 0.75 and r["drain"]["done"]
        and r["drain"]["lag_s"] is not None and r["drain"]["lag_s"] <= 2.0
        and not r["blocking"]["errors"] and not r["webhook"]["errors"] for r in rows
    )  # fmt: skip
    return (f"- non-blocking send with a webhook / plain blocking send: "
            f"{', '.join(f'{x:.2f}x' for x in ratios)}; delivery lag after the last send "
            f"{', '.join(f'{x:.2f} s' for x in lags)} (target >= 0.75x with every delivery "
            f"within 2 s): {'MET' if met else 'MISSED'}")  # fmt: skip


# -- the run -------------------------------------------------------------------------------


def run_all(bench: hub.Bench) -> list[dict[str, Any]]:
    args = bench.args
    web_port, hook_port = [p for p in range(args.port, args.port + 50) if hub.port_free(p)][:2]
    name = f"a2abench_push_{bench.tag}"
    dsn = hub.create_database(bench, name)
    if args.no_commit_wait:
        hub.admin_sql(bench, f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    hub.flush_redis(bench)
    env = hub.hub_env(dsn.replace("postgresql://", "postgres://"), args.redis,
                      bench.logs / "data")  # fmt: skip
    env["OUTBOUND_ALLOWED_HOSTS"] = "127.0.0.1"
    env["CELERY_CONCURRENCY"] = str(args.celery_concurrency)
    print("== preparing the hub (migrate, seed, bench-push agent)")
    hub.prepare_hub(bench, env)
    done = subprocess.run([hub.python(), "manage.py", "shell", "-c", AGENTS], cwd=hub.REPO,
                          env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"creating the bench agent failed:\n{done.stdout}\n{done.stderr}")
    print("  " + done.stdout.strip())
    celery_pid = start_celery(bench, env, args.celery_concurrency)
    web_pid = bench.start(args.server, hub.hub_web_command(args.server, web_port), env, hub.REPO)
    hub.wait_http(
        bench,
        args.server,
        f"http://127.0.0.1:{web_port}/agents/{AGENT}/.well-known/agent-card.json",
    )
    what = "send ratio" if args.send_ratio else "push deliveries"
    print(f"\n== {what} ({args.protocol}, one Celery worker, "
          f"-P threads -c {args.celery_concurrency})")  # fmt: skip
    ctx = {
        "args": args, "receiver": Receiver(args.slow_seconds), "dsn": dsn, "hook_port": hook_port,
        "hook": f"http://127.0.0.1:{hook_port}/hook",
        "hook_base": f"http://127.0.0.1:{hook_port}",
        "url": f"http://127.0.0.1:{web_port}/agents/{AGENT}/jsonrpc/",
        "pids": {"celery": celery_pid, "web": web_pid},
    }  # fmt: skip
    if args.send_ratio:
        ctx["url"] = f"http://127.0.0.1:{web_port}/agents/{args.agent}/jsonrpc/"
        receiver = multiprocessing.get_context("fork").Process(
            target=serve_receiver, args=(hook_port,), daemon=True
        )
        receiver.start()
        try:
            hub.wait_http(bench, args.server, f"{ctx['hook_base']}/arrivals")
            results = asyncio.run(send_ratio(ctx))
        finally:
            receiver.terminate()
            receiver.join(5)
        bench.check_alive("celery")
        return results
    results = asyncio.run(drive(ctx))
    bench.check_alive("celery")
    return results


def start_celery(bench: hub.Bench, env: dict[str, str], concurrency: int) -> int:
    if concurrency == 4:
        return hub.start_celery(bench, env)  # run.py's worker: -P threads -c 4
    command = [hub.python(), "-m", "celery", "-A", "a2ahub", "worker", "-P", "threads", "-c",
               str(concurrency), "--without-gossip", "--without-mingle", "--without-heartbeat",
               "-l", "WARNING", "-n", f"bench{bench.tag}@%h"]  # fmt: skip
    return bench.start("celery", command, env, hub.REPO)


# -- the report ----------------------------------------------------------------------------


def fmt(value: Any, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(results: list[dict[str, Any]]) -> str:
    lines = ["| phase | tasks (c) | send s | deliveries | delivered | received | retried "
             "| deliveries/s (1 worker) | latency p50 ms | p90 ms | p99 ms | max ms "
             "| worker CPU ms/delivery | web CPU ms/delivery |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in results:
        lines.append(
            f"| {r['phase']} | {r['tasks']} ({r['c']}) | {r['send_s']:.1f} | {r['deliveries']} "
            f"| {r['delivered']} | {r['received']} | {r['retried']} | {r['per_s']:.1f} "
            f"| {fmt(r['p50'])} | {fmt(r['p90'])} | {fmt(r['p99'])} | {fmt(r['max'])} "
            f"| {r['cpu_ms']['celery']:.2f} | {r['cpu_ms']['web']:.2f} |"
        )
    return "\n".join(lines)


def notes(results: list[dict[str, Any]]) -> str:
    out = []
    for r in results:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(r["kinds"].items()))
        extra = []
        if r["pending"] or r["abandoned"]:
            extra.append(f"{r['pending']} still pending, {r['abandoned']} abandoned")
        if r.get("slow_tasks"):
            extra.append(f"{r['slow_in_flight']} requests reached the slow receiver "
                         f"({r['slow_tasks']} queues, answering {r['slow_seconds']:g} s late) "
                         "while the fast ones drained")  # fmt: skip
        if r["send_errors"]:
            extra.append(f"{r['send_errors']} send errors, e.g. {r['error_examples'][0]}")
        if r.get("p50_by_kind"):
            extra.append("latency p50 by kind: " + ", ".join(
                f"{k} {v:.1f} ms" for k, v in sorted(r["p50_by_kind"].items())))  # fmt: skip
        if r.get("start_p50") is not None:
            extra.append(f"the delivering attempt started {r['start_p50']:.1f} ms (p50) after "
                         "the event was stored")  # fmt: skip
        since = "worker resumed" if r["phase"].startswith("backlog") else "first event"
        out.append(f"- {r['phase']}: events delivered per kind: {kinds}; window "
                   f"{r['window_s']:.1f} s ({since} to last arrival)"
                   + ("; " + "; ".join(extra) if extra else ""))  # fmt: skip
    return "\n".join(out)


def environment(bench: hub.Bench) -> str:
    from importlib.metadata import version

    names = ("django", "daphne", "celery", "httpx", "aiohttp")
    packages = ", ".join(f"{n} {version(n)}" for n in names)
    pins = ("servers, Celery, PostgreSQL, Redis on core 0; sender and receiver on core 1"
            if bench.pin else "not pinned")  # fmt: skip
    a = bench.args
    return (f"{dt.datetime.now().isoformat(timespec='minutes')}, {os.cpu_count()} cores, "
            f"Python {sys.version.split()[0]}; {packages}; pinning: {pins}; {a.server}; one "
            f"Celery worker -P threads -c {a.celery_concurrency}; A2A {a.protocol} inline "
            "push config; echo agent (inline)")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.shared = args.shared.resolve()
    pin = hub.check_prerequisites(args)
    started = time.monotonic()
    with hub.bench_session(args, "a2ahub-push-", pin, client_core=True) as bench:
        results = run_all(bench)
    if args.send_ratio:
        return ratio_report(bench, results, time.monotonic() - started)
    text = "\n\n".join([f"Run: {environment(bench)}", table(results), notes(results)])
    print(f"\n{text}\n\n(total {time.monotonic() - started:.0f} s)")
    if args.markdown:
        args.markdown.write_text(f"# Push delivery benchmark\n\n{text}\n")
    bad = any(r["send_errors"] or r["pending"] or r["received"] < r["delivered"] for r in results)
    return 1 if bad else 0


def ratio_report(bench: hub.Bench, rows: list[dict[str, Any]], took: float) -> int:
    a = bench.args
    run = (f"{environment(bench).split('; A2A')[0]}; `{a.agent}` agent, A2A {a.protocol}, "
           f"c={a.ratio_c}, {a.duration:g} s measured + {a.warmup:g} s warm-up a run"
           + ("; commits not waiting for the disk" if a.no_commit_wait else ""))  # fmt: skip
    text = "\n\n".join([f"Run: {run}", ratio_table(rows, a), ratio_verdict(rows)])
    print(f"\n{text}\n\n(total {took:.0f} s)")
    if a.markdown:
        a.markdown.write_text(f"# Non-blocking send with a webhook\n\n{text}\n")
    bad = any(r["blocking"].get("fatal") or r["webhook"].get("fatal") or r["blocking"]["errors"]
              or r["webhook"]["errors"] or not r["drain"]["done"] for r in rows)  # fmt: skip
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
