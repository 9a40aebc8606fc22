"""Streams: the hub against the official A2A SDK on a five-chunk stream, and the memory of one
web process holding 1,000 open streams.

It starts the hub in distributed mode (PostgreSQL, Redis, one Celery worker, daphne) and the
SDK's in-memory echo server with bench/run.py's machinery, then

1. drives A2A 0.3 `message/stream` with ../shared/bench/a2a_load.py (`--method stream`) at
   c=1 and c=16 against the SDK's `/stream5/` and the hub's `bench-echo5` agent (executor
   `echo`, `{"chunks": 5}`: the same five chunks, inline), and prints time to first and final
   event (p50/p99) and ratios;
2. queues 1,000 long tasks on a `bench-hold` agent (executor `slow`, worker mode, 600 s),
   opens one `tasks/resubscribe` SSE stream to each against the one daphne process, checks
   that every stream got its first event, reads the process's RSS from /proc before and after,
   then closes the streams and cancels the tasks.

    python bench/streams.py                       # from the repository root; about 2 minutes
    python bench/streams.py --markdown out.md     # also writes the tables to a file
    python bench/streams.py --help
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as hub

TARGET_CONCURRENCY = 16
HOLD_AGENT = "bench-hold"
STREAM_AGENT = "bench-echo5"

AGENTS = f"""
from agents.models import Agent, Skill
for slug, kind, mode, settings in (
    ("{STREAM_AGENT}", "echo", "inline", {{"chunks": 5}}),
    ("{HOLD_AGENT}", "slow", "worker", {{"seconds": 600, "step": 5}}),
):
    agent, _ = Agent.objects.update_or_create(slug=slug, defaults=dict(
        name=slug, description="bench agent", executor_kind=kind, execution_mode=mode,
        executor_settings=settings, streaming=True))
    Skill.objects.get_or_create(agent=agent, skill_id=kind, defaults=dict(
        name=kind, description=kind, tags=["bench"], position=0))
print("bench agents:", list(Agent.objects.filter(slug__startswith="bench-")
                            .values_list("slug", "executor_kind", "execution_mode")))
"""


# -- command line --------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    hub.add_service_arguments(p, redis_db=8)
    p.add_argument("-d", "--duration", type=float, default=8.0, help="measured s per stream run")
    p.add_argument("--warmup", type=float, default=1.0, help="unmeasured s per stream run")
    p.add_argument("-c", "--concurrency", default="1,16", help="comma-separated levels")
    p.add_argument("--streams", type=int, default=1000, help="open streams to hold (max 5000)")
    p.add_argument(
        "--open-parallel",
        type=int,
        default=50,
        help="streams being opened at once (each opening reads the database)",
    )
    p.add_argument(
        "--hold",
        type=float,
        default=10.0,
        help="seconds to keep all streams open before reading RSS",
    )
    p.add_argument(
        "--heartbeat",
        type=float,
        default=5.0,
        help="SSE_HEARTBEAT_SECONDS for the hub (keep-alive comments)",
    )
    p.add_argument(
        "--stream-timeout",
        type=float,
        default=5.0,
        help="a2a_load --timeout: a stream not done by then counts as an error",
    )
    p.add_argument(
        "--max-errors",
        type=int,
        default=40,
        help="stop opening streams after this many failed (each waits out the "
        "database pool's 10 s timeout)",
    )
    p.add_argument(
        "--pool-max", type=int, help="DATABASE_POOL_MAX for the hub (default: the hub's own, 20)"
    )
    p.add_argument(
        "--profile",
        action="store_true",
        help="after the measured runs, one more hub c=16 run under py-spy --gil",
    )
    p.add_argument("--skip-latency", action="store_true", help="only the 1,000-stream part")
    p.add_argument("--skip-hold", action="store_true", help="only the latency part")
    hub.add_run_arguments(p, first_port=8170)
    args = p.parse_args(argv)
    args.levels = [int(c) for c in args.concurrency.split(",") if c.strip()]
    args.streams = max(1, min(args.streams, 5000))
    return args


def raise_fd_limit(wanted: int = 65536) -> int:
    """Children (daphne, the Celery worker) inherit the limit of this process."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# -- /proc ---------------------------------------------------------------------------------


def proc_memory(pid: int) -> dict[str, int]:
    """VmRSS and friends in KiB, open fds and threads of one process."""
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM", "Threads"):
            out[key] = int(value.split()[0])
    out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    return out


# -- latency: a2a_load --method stream -------------------------------------------------------


def run_stream_load(bench: hub.Bench, label: str, url: str, c: int, pids: list[int]) -> dict:
    args = bench.args
    out = bench.logs / "load.jsonl"
    command = [hub.python(), str(args.shared / "a2a_load.py"), "--url", url, "--method", "stream",
               "--protocol", "0.3", "-c", str(c), "-d", str(args.duration), "--warmup",
               str(args.warmup), "--label", label, "--json-out", str(out), "--timeout",
               str(args.stream_timeout), "--cpu-comm", "postgres"]  # fmt: skip
    for pid in pids:
        command += ["--cpu-pid", str(pid)]
    before = out.read_text().count("\n") if out.exists() else 0
    done = subprocess.run(bench.pinned_command(command, hub.GENERATOR_CORE), capture_output=True,
                          text=True, timeout=args.duration + args.warmup + 120)  # fmt: skip
    lines = out.read_text().splitlines() if out.exists() else []
    if len(lines) <= before:
        raise RuntimeError(f"a2a_load gave no result for {label}:\n{done.stdout}\n{done.stderr}")
    raw = json.loads(lines[-1])
    print(hub.indent(done.stdout.strip()))
    row = hub.summarize(raw, pids)
    if "fatal" not in row:
        row.update(ttfe=raw.get("ttfe") or {}, final=raw.get("t_final") or {},
                   events=(raw.get("events_per_stream") or raw.get("events") or {}))  # fmt: skip
        # Little's law for a closed loop: c / mean latency should match the measured rate; far
        # fewer streams than that means some clients sat on a stream that did not end in time.
        mean = (raw.get("latency") or {}).get("mean_ms")
        row["expected_rps"] = round(c / (mean / 1000), 1) if mean else None
    return row


def latency_runs(
    bench: hub.Bench, sdk_port: int, hub_port: int, pids: dict[str, list[int]]
) -> list:
    rows = []
    targets = [("sdk-memory /stream5/", f"http://127.0.0.1:{sdk_port}/stream5/", "sdk"),
               (f"hub-daphne {STREAM_AGENT}",
                f"http://127.0.0.1:{hub_port}/agents/{STREAM_AGENT}/jsonrpc/", "hub")]  # fmt: skip
    for label, url, kind in targets:
        for c in bench.args.levels:
            print(f"  {label} c={c}")
            row = run_stream_load(bench, label, url, c, pids[kind])
            row.update(kind=kind)
            rows.append(row)
    return rows


def profile_stream(bench: hub.Bench, port: int, web_pid: int, celery_pid: int) -> None:
    import profile_hub  # bench/profile_hub.py: py-spy record and summary

    raw = bench.logs / "hub-daphne.raw"
    spy = profile_hub.record(web_pid, bench.args.duration + bench.args.warmup + 1, 250, raw, True)
    url = f"http://127.0.0.1:{port}/agents/{STREAM_AGENT}/jsonrpc/"
    row = run_stream_load(bench, "profiled hub-daphne", url, TARGET_CONCURRENCY, [web_pid])
    spy.wait(timeout=60)
    cpu_ms = row.get("server_ms")
    print(profile_hub.summarize(raw, 30, cpu_ms) if raw.exists() else "  no py-spy output")


# -- 1,000 open streams --------------------------------------------------------------------


async def rpc(session: Any, url: str, method: str, params: dict, rid: int) -> dict:
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    async with session.post(url, json=body) as response:
        data = await response.json(content_type=None)
    if "error" in data:
        raise RuntimeError(f"{method}: {data['error']}")
    return data["result"]


async def bounded(limit: int, coros: list) -> list:
    gate = asyncio.Semaphore(limit)

    async def one(coro: Any) -> Any:
        async with gate:
            return await coro

    return await asyncio.gather(*(one(c) for c in coros), return_exceptions=True)


class Holder:
    """Opens `n` tasks/resubscribe streams and keeps reading them until told to stop."""

    def __init__(self, url: str, n: int) -> None:
        self.url = url
        self.n = n
        self.first: dict[int, float] = {}  # stream index -> seconds to first event
        self.events = 0
        self.keepalives = 0
        self.errors: list[str] = []
        self.max_errors = 10**9
        self.skipped = 0
        self.open_now = 0
        self.stop = asyncio.Event()

    async def stream(
        self, session: Any, index: int, task_id: str, opened: asyncio.Semaphore
    ) -> None:
        """One stream; `opened` bounds the streams still waiting for their first event."""
        body = {"jsonrpc": "2.0", "id": index, "method": "tasks/resubscribe",
                "params": {"id": task_id}}  # fmt: skip
        started = time.perf_counter()
        await opened.acquire()
        if len(self.errors) >= self.max_errors:
            self.skipped += 1
            opened.release()
            return
        try:
            headers = {"Accept": "text/event-stream"}
            async with session.post(self.url, json=body, headers=headers) as response:
                ctype = response.headers.get("Content-Type", "")
                if response.status != 200 or not ctype.startswith("text/event-stream"):
                    text = (await response.read())[:200]
                    raise RuntimeError(f"HTTP {response.status} {ctype}: {text!r}")
                self.open_now += 1
                try:
                    await self.read(response, index, started, opened)
                finally:
                    self.open_now -= 1
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.errors.append(f"{type(exc).__name__}: {exc}"[:300])
        finally:
            if index not in self.first:
                opened.release()

    async def read(
        self, response: Any, index: int, started: float, opened: asyncio.Semaphore
    ) -> None:
        buffer = b""
        async for chunk in response.content.iter_any():
            buffer += chunk
            while b"\n\n" in buffer:
                block, buffer = buffer.split(b"\n\n", 1)
                if block.startswith(b":"):
                    self.keepalives += 1
                    continue
                data = [ln[5:] for ln in block.split(b"\n") if ln.startswith(b"data:")]
                if not data:
                    continue
                payload = json.loads(b"\n".join(data))
                if "error" in payload:
                    raise RuntimeError(f"stream error {payload['error']}")
                self.events += 1
                if index not in self.first:
                    self.first[index] = time.perf_counter() - started
                    opened.release()
            if self.stop.is_set():
                return


async def create_hold_tasks(session: Any, url: str, n: int) -> list[str]:
    async def one(i: int) -> str:
        params = {"message": {"kind": "message", "role": "user", "messageId": f"hold-{i}",
                              "parts": [{"kind": "text", "text": "600"}]},
                  "configuration": {"blocking": False}}  # fmt: skip
        result = await rpc(session, url, "message/send", params, i)
        return result["id"]

    results = await bounded(16, [one(i) for i in range(n)])
    failures = [r for r in results if isinstance(r, BaseException)]
    if failures:
        raise RuntimeError(f"{len(failures)} of {n} hold tasks failed: {failures[0]!r}")
    return list(results)  # type: ignore[arg-type]


async def hold_streams(bench: hub.Bench, port: int, web_pid: int) -> dict[str, Any]:
    import aiohttp

    args = bench.args
    url = f"http://127.0.0.1:{port}/agents/{HOLD_AGENT}/jsonrpc/"
    n = args.streams
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=None)
    connector = aiohttp.TCPConnector(limit=0, force_close=False)
    result: dict[str, Any] = {"streams": n}
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        t0 = time.monotonic()
        task_ids = await create_hold_tasks(session, url, n + 20)
        result["create_s"] = round(time.monotonic() - t0, 1)
        warm, task_ids = task_ids[:20], task_ids[20:]
        print(f"  {len(task_ids) + len(warm)} hold tasks queued in {result['create_s']} s")

        # Warm-up: open and close a few streams so one-time costs are not counted per stream.
        warmer = Holder(url, len(warm))
        gate = asyncio.Semaphore(len(warm))
        jobs = [asyncio.create_task(warmer.stream(session, i, t, gate)) for i, t in enumerate(warm)]
        await wait_until(lambda: len(warmer.first) + len(warmer.errors) >= len(warm), 30)
        warmer.stop.set()
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
        await asyncio.sleep(1.0)

        result["before"] = proc_memory(web_pid)
        holder = Holder(url, n)
        gate = asyncio.Semaphore(args.open_parallel)
        t0 = time.monotonic()
        jobs = [asyncio.create_task(holder.stream(session, i, t, gate))
                for i, t in enumerate(task_ids)]  # fmt: skip
        holder.max_errors = args.max_errors
        await wait_until(lambda: len(holder.first) + len(holder.errors) + holder.skipped >= n, 180)
        result["open_s"] = round(time.monotonic() - t0, 1)
        print(f"  {len(holder.first)} of {n} streams got their first event in "
              f"{result['open_s']} s ({len(holder.errors)} errors, {holder.skipped} not "
              "tried after too many errors)")  # fmt: skip
        result["skipped"] = holder.skipped
        keepalives_then = holder.keepalives
        await asyncio.sleep(args.hold)
        result["during"] = proc_memory(web_pid)
        result["open_after_hold"] = holder.open_now
        result["first_event"] = len(holder.first)
        result["errors"] = holder.errors[:5]
        result["error_count"] = len(holder.errors)
        result["keepalives_during_hold"] = holder.keepalives - keepalives_then
        firsts = sorted(holder.first.values())
        if firsts:
            result["first_p50_ms"] = round(statistics.median(firsts) * 1000, 1)
            result["first_p99_ms"] = round(firsts[min(len(firsts) - 1, int(len(firsts) * 0.99))]
                                           * 1000, 1)  # fmt: skip
        print(f"  held {holder.open_now} streams for {args.hold:g} s; "
              f"{result['keepalives_during_hold']} keep-alives read")  # fmt: skip

        # Close every stream, then cancel every task.
        holder.stop.set()
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
        t0 = time.monotonic()
        cancels = await bounded(16, [rpc(session, url, "tasks/cancel", {"id": t}, i)
                                     for i, t in enumerate(warm + task_ids)])  # fmt: skip
        result["cancel_failed"] = sum(isinstance(r, BaseException) for r in cancels)
        result["cancel_s"] = round(time.monotonic() - t0, 1)
        await asyncio.sleep(2.0)
        result["after_close"] = proc_memory(web_pid)
    return result


async def wait_until(predicate: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.1)
    return predicate()


# -- the run -------------------------------------------------------------------------------


def create_agents(env: dict[str, str]) -> None:
    """The bench's own agents (`AGENTS`), in a hub `hub.prepare_hub` has made."""
    done = subprocess.run([hub.python(), "manage.py", "shell", "-c", AGENTS], cwd=hub.REPO,
                          env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"creating the bench agents failed:\n{done.stdout}\n{done.stderr}")
    print("  " + done.stdout.strip())


def run_all(bench: hub.Bench) -> tuple[list[dict], dict[str, Any] | None]:
    args = bench.args
    ports = [p for p in range(args.port, args.port + 50) if hub.port_free(p)][:2]
    hub_url = hub.create_database(bench, f"a2abench_streams_{bench.tag}").replace(
        "postgresql://", "postgres://"
    )
    hub.flush_redis(bench)
    env = hub.hub_env(hub_url, args.redis, bench.logs / "data")
    env["SSE_HEARTBEAT_SECONDS"] = str(args.heartbeat)
    if args.pool_max:
        env["DATABASE_POOL_MAX"] = str(args.pool_max)
    print("== preparing the hub (migrate, seed, bench agents)")
    hub.prepare_hub(bench, env)
    create_agents(env)
    celery_pid = hub.start_celery(bench, env)
    rows: list[dict] = []
    if not args.skip_latency:
        print("\n== sdk-memory")
        sdk_pid = hub.start_sdk(bench, "sdk-memory", ports[0], "")
        hub.wait_http(
            bench, "sdk-memory", f"http://127.0.0.1:{ports[0]}/.well-known/agent-card.json"
        )
    web_pid = bench.start("hub-daphne", hub.hub_web_command("hub-daphne", ports[1]), env, hub.REPO)
    hub.wait_http(
        bench, "hub-daphne", f"http://127.0.0.1:{ports[1]}/agents/echo/.well-known/agent-card.json"
    )
    hold = None
    if not args.skip_latency:
        print("\n== five-chunk streams (0.3 message/stream)")
        rows = latency_runs(bench, ports[0], ports[1],
                            {"sdk": [sdk_pid], "hub": [web_pid, celery_pid]})  # fmt: skip
        bench.stop("sdk-memory")
    if args.profile:
        print("\n== profile: hub-daphne c=16 under py-spy --gil")
        profile_stream(bench, ports[1], web_pid, celery_pid)
    if not args.skip_hold:
        print(f"\n== {args.streams} open streams on one daphne process (pid {web_pid})")
        hold = asyncio.run(hold_streams(bench, ports[1], web_pid))
        bench.check_alive("hub-daphne")
    return rows, hold


# -- the report ----------------------------------------------------------------------------


def ms(d: dict, key: str) -> str:
    value = d.get(key)
    return "-" if value is None else f"{value:.1f}"


def latency_table(rows: list[dict]) -> str:
    lines = ["| server | c | streams/s | first event p50 ms | p99 ms | final event p50 ms "
             "| p99 ms | errors | server CPU ms/stream | PG CPU ms/stream | c / mean latency "
             "| first p50 x SDK | final p50 x SDK |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        if "fatal" in r:
            lines.append(f"| {r['label']} | FATAL: {r['fatal']} ||||||||||||")
            continue
        ref = next((o for o in rows if o.get("kind") == "sdk" and o.get("c") == r["c"]
                    and "fatal" not in o), None)  # fmt: skip
        ratios = ["-", "-"]
        if r["kind"] == "hub" and ref:
            for i, key in enumerate(("ttfe", "final")):
                mine, theirs = r[key].get("p50_ms"), ref[key].get("p50_ms")
                if mine and theirs:
                    ratios[i] = f"{mine / theirs:.2f}"
        lines.append(
            f"| {r['label']} | {r['c']} | {hub.fmt(r['rps'])} | {ms(r['ttfe'], 'p50_ms')} "
            f"| {ms(r['ttfe'], 'p99_ms')} | {ms(r['final'], 'p50_ms')} "
            f"| {ms(r['final'], 'p99_ms')} "
            f"| {r['errors']} | {hub.fmt(r['server_ms'], 2)} | {hub.fmt(r['pg_ms'], 2)} "
            f"| {hub.fmt(r.get('expected_rps'))} | {ratios[0]} | {ratios[1]} |"
        )
    return "\n".join(lines)


def latency_verdict(rows: list[dict]) -> str:
    out = []
    for c in sorted({r.get("c") for r in rows if "fatal" not in r}):
        mine = next((r for r in rows if r.get("kind") == "hub" and r.get("c") == c), None)
        ref = next((r for r in rows if r.get("kind") == "sdk" and r.get("c") == c), None)
        if not mine or not ref or "fatal" in mine or "fatal" in ref:
            continue
        a, b = mine["ttfe"].get("p50_ms"), ref["ttfe"].get("p50_ms")
        if a is None or b is None:
            continue
        verdict = "MET" if a <= b and mine["errors"] == 0 else "MISSED"
        target = " (the target)" if c == TARGET_CONCURRENCY else ""
        out.append(f"- c={c}{target}: hub first-event p50 {a:.1f} ms vs SDK {b:.1f} ms "
                   f"(hub <= SDK): {verdict}")  # fmt: skip
    for r in rows:
        want = r.get("expected_rps")
        if want and r["rps"] < 0.7 * want:
            out.append(
                f"- WARNING {r['label']} c={r['c']}: {r['rps']} streams/s but c / mean "
                f"latency = {want}: some clients waited on streams that did not end "
                "inside the window (stalled streams); compare errors and the server log"
            )
    return "\n".join(out)


def hold_table(h: dict[str, Any]) -> str:
    b, d, a = h["before"], h["during"], h["after_close"]
    grown = d["VmRSS"] - b["VmRSS"]
    per = grown / max(h["first_event"], 1)
    lines = [
        "| | VmRSS MiB | RssAnon MiB | open fds | threads |",
        "|---|---|---|---|---|",
        f"| before (warm, no streams) | {b['VmRSS'] / 1024:.1f} | {b['RssAnon'] / 1024:.1f} "
        f"| {b['fds']} | {b['Threads']} |",
        f"| {h['open_after_hold']} streams open | {d['VmRSS'] / 1024:.1f} "
        f"| {d['RssAnon'] / 1024:.1f} | {d['fds']} | {d['Threads']} |",
        f"| after closing them | {a['VmRSS'] / 1024:.1f} | {a['RssAnon'] / 1024:.1f} "
        f"| {a['fds']} | {a['Threads']} |",
    ]
    ok = h["first_event"] == h["streams"] and h["open_after_hold"] == h["streams"]
    summary = (
        f"{h['first_event']} of {h['streams']} streams got their first event "
        f"({h.get('skipped', 0)} not tried after {h['error_count']} errors; "
        f"p50 {h.get('first_p50_ms', '-')} ms, p99 {h.get('first_p99_ms', '-')} ms after "
        f"the request, opened {h.get('open_s')} s for all, {h['error_count']} errors); "
        f"{h['open_after_hold']} still open after the hold; "
        f"{h['keepalives_during_hold']} keep-alive comments read during the hold. "
        f"RSS grew {grown / 1024:.1f} MiB = {per:.1f} KiB per open stream. "
        f"Target (1,000 concurrent streams on one web process): {'MET' if ok else 'MISSED'}. "
        f"Tasks canceled afterwards: {h['streams'] + 20 - h['cancel_failed']} "
        f"in {h['cancel_s']} s."
    )
    if h["errors"]:
        summary += f" First errors: {h['errors']}"
    return "\n".join(lines) + "\n\n" + summary


def environment(bench: hub.Bench) -> str:
    from importlib.metadata import version

    names = ("django", "daphne", "channels", "celery", "a2a-sdk", "aiohttp")
    packages = ", ".join(f"{n} {version(n)}" for n in names)
    pins = ("servers, Celery, PostgreSQL, Redis on core 0; clients on core 1"
            if bench.pin else "not pinned")  # fmt: skip
    return (f"{dt.datetime.now().isoformat(timespec='minutes')}, {os.cpu_count()} cores, "
            f"Python {sys.version.split()[0]}; {packages}; pinning: {pins}; "
            f"{bench.args.duration:g} s measured + {bench.args.warmup:g} s warm-up per stream "
            f"run; hub SSE_HEARTBEAT_SECONDS={bench.args.heartbeat:g}")  # fmt: skip


def report(bench: hub.Bench, rows: list[dict], hold: dict[str, Any] | None) -> str:
    parts = [f"Run: {environment(bench)}"]
    if rows:
        parts += ["Five-chunk stream, A2A 0.3 `message/stream` (SDK `/stream5/`: task, 5 "
                  "artifact chunks, completed = 7 events; hub `echo` with 5 chunks: task, "
                  "working, 5 artifact chunks, completed = 8 events, each stored):",
                  latency_table(rows), latency_verdict(rows)]  # fmt: skip
    if hold:
        parts += [f"{hold['streams']} open `tasks/resubscribe` streams on one daphne process:",
                  hold_table(hold)]  # fmt: skip
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.shared = args.shared.resolve()
    pin = hub.check_prerequisites(args)
    fds = raise_fd_limit()
    if fds < args.streams + 200:
        raise SystemExit(f"open-file limit {fds} is too low for {args.streams} streams")
    started = time.monotonic()
    with hub.bench_session(args, "a2ahub-streams-", pin, client_core=True) as bench:
        rows, hold = run_all(bench)
    text = report(bench, rows, hold)
    print(f"\n{text}\n\n(total {time.monotonic() - started:.0f} s)")
    if args.markdown:
        args.markdown.write_text(f"# Streams benchmark\n\n{text}\n")
    failed = any("fatal" in r or r["errors"] for r in rows)
    if hold and (hold["first_event"] < hold["streams"] or hold["error_count"]):
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
