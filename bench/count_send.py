"""What one blocking `message/send` costs inside the hub: SQL statements (the ORM's and the event
loop's asyncpg ones), transactions, pool checkouts, Redis commands, and the CPU time of the main
steps, for both execution modes.

It makes its own PostgreSQL database and uses a Redis database of its own (both removed at the
end), loads the hub in this process and calls its ASGI application directly, one request at a
time. Worker-mode jobs run on this process's thread pool instead of a Celery worker, so their
statements are counted too (the real `run_task.delay` is timed separately).

    python bench/count_send.py -n 200
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import contextvars
import functools
import json
import os
import re
import secrets
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as bench_run  # bench/run.py: databases, hub set-up

STATS: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
TIMES: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0])  # wall, cpu, n
# Set inside worker jobs; sync_to_async carries it into whichever thread runs the sync code.
IN_WORKER: contextvars.ContextVar[bool] = contextvars.ContextVar("in_worker", default=False)


def side() -> str:
    return "worker" if IN_WORKER.get() else "web"


def count(kind: str, key: str) -> None:
    STATS[f"{side()}:{kind}"][key] += 1


def normalize(sql: str) -> str:
    sql = re.sub(r"\s+", " ", sql)
    sql = re.sub(r"'[^']*'|%s|\$\d+|\b\d+\b", "?", sql)
    sql = re.sub(r"\((?:\?, )+\?\)", "(...)", sql)
    head = sql.split(" FROM ")[0] if sql.startswith("SELECT") else sql
    table = re.search(r'(?:FROM|INTO|UPDATE) "(\w+)"', sql)
    return f"{head[:60]}... [{table.group(1) if table else '?'}]"


# -- instrumentation -------------------------------------------------------------------------


def instrument_database() -> None:
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.db.backends.utils import CursorWrapper

    original_execute = CursorWrapper._execute
    original_many = CursorWrapper._executemany

    def execute(self: Any, sql: str, params: Any, *args: Any) -> Any:
        count("sql", normalize(sql))
        count("sql thread", threading.current_thread().name.rstrip("0123456789_"))
        if not self.db.in_atomic_block:
            count("tx", "autocommit statement (its own transaction)")
        return original_execute(self, sql, params, *args)

    def executemany(self: Any, sql: str, params: Any, *args: Any) -> Any:
        count("sql", "MANY " + normalize(sql))
        return original_many(self, sql, params, *args)

    CursorWrapper._execute = execute  # type: ignore[method-assign]
    CursorWrapper._executemany = executemany  # type: ignore[method-assign]
    wrap_method(BaseDatabaseWrapper, "_commit", "tx", "COMMIT of an atomic block")
    wrap_method(BaseDatabaseWrapper, "connect", "pool", "connection checkout (connect)")
    wrap_method(BaseDatabaseWrapper, "_close", "pool", "connection return (close)")


def instrument_asyncpg() -> None:
    """The one-statement writes and reads made from an event loop (`a2ahub.asyncdb`), which
    the ORM's cursor never sees: on the hot paths, most of a send's statements."""
    from a2ahub import asyncdb

    original_run = asyncdb.run

    async def run(statement: str, values: list[Any], fetch: bool) -> list[tuple[Any, ...]]:
        count("sql", "ASYNCPG " + normalize(statement))
        count("sql thread", "event loop (asyncpg)")
        count("tx", "autocommit statement (its own transaction)")
        count("pool", "asyncpg acquire")
        return await original_run(statement, values, fetch)

    asyncdb.run = run  # type: ignore[assignment]


def wrap_method(cls: type, name: str, kind: str, key: str) -> None:
    original = getattr(cls, name)

    @functools.wraps(original)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        count(kind, key)
        return original(self, *args, **kwargs)

    setattr(cls, name, wrapper)


def instrument_redis() -> None:
    import redis.asyncio.client as aclient
    import redis.client as client

    def sync_wrap(original: Callable[..., Any], label: str) -> Callable[..., Any]:
        @functools.wraps(original)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            count("redis", f"{label} {args[0] if args else ''}")
            return original(self, *args, **kwargs)

        return wrapper

    def async_wrap(original: Callable[..., Any], label: str) -> Callable[..., Any]:
        @functools.wraps(original)
        async def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            count("redis", f"{label} {args[0] if args else ''}")
            return await original(self, *args, **kwargs)

        return wrapper

    client.Redis.execute_command = sync_wrap(client.Redis.execute_command, "sync")
    client.Pipeline.execute = sync_wrap(client.Pipeline.execute, "sync pipeline")
    aclient.Redis.execute_command = async_wrap(aclient.Redis.execute_command, "async")
    aclient.PubSub.execute_command = async_wrap(aclient.PubSub.execute_command, "async pubsub")


def timed(label: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """Wall and thread-CPU time of a step; a coroutine function gets wall time only."""
    if asyncio.iscoroutinefunction(function):

        @functools.wraps(function)
        async def awrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await function(*args, **kwargs)
            finally:
                add_time(label, time.perf_counter() - t0, None)

        return awrapper

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            add_time(label, time.perf_counter() - t0, time.thread_time() - c0)

    return wrapper


def add_time(label: str, wall: float, cpu: float | None) -> None:
    entry = TIMES[label]
    entry[0] += wall
    entry[1] += cpu or 0.0
    entry[2] += 1


def instrument_threads() -> None:
    """Count thread hops (sync_to_async calls) by function, and threads started."""
    from asgiref.sync import SyncToAsync

    original_call = SyncToAsync.__call__

    async def hop(self: Any, *args: Any, **kwargs: Any) -> Any:
        count("thread hops", getattr(self.func, "__qualname__", repr(self.func))[:70])
        return await original_call(self, *args, **kwargs)

    SyncToAsync.__call__ = hop  # type: ignore[method-assign]
    original_start = threading.Thread.start

    def start(self: threading.Thread) -> None:
        count("threads started", re.sub(r"\d+", "N", self.name))
        original_start(self)

    threading.Thread.start = start  # type: ignore[method-assign]


def instrument_steps() -> None:
    from protocol import door, jsonrpc, v03
    from protocol.handlers import tasks as methods
    from tasks import events, jobs, queueing, reading, runner, updater, writer

    door.agent_named = timed("web: agent_named (Agent + skills)", door.agent_named)
    door.authenticate_caller = timed("web: authenticate", door.authenticate_caller)
    v03.PARAMS_IN["send"] = timed("web: 0.3 params -> 1.0 request", v03.PARAMS_IN["send"])
    v03.RESULT_OUT["send"] = timed("web: 1.0 Task -> 0.3 JSON", v03.RESULT_OUT["send"])
    jsonrpc.rpc_response = timed("web: JsonResponse (json.dumps)", jsonrpc.rpc_response)
    methods.send_message = timed("web: send_message (whole handler, wall)", methods.send_message)
    methods.load_task = timed("web: load_task (re-read Task for the answer)", reading.load_task)
    writer.open = timed("any: writer.open", writer.open)
    writer.record = timed("any: writer.record", writer.record)
    events.publish = timed("any: events.publish (after commit)", events.publish)
    runner.claim_and_load = timed("worker: claim_and_load", runner.claim_and_load)
    updater.TaskUpdater._store = timed("any: TaskUpdater._store", updater.TaskUpdater._store)
    original_run_task = jobs.run_task.run
    jobs.run_task.run = timed("worker: run_task job (whole, CPU of its thread)", original_run_task)

    def in_worker(*args: str) -> None:
        IN_WORKER.set(True)
        jobs.run_task.run(*args)

    pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="bench-worker")

    # Jobs run as in a Celery worker process: each on its thread's own loop, the ORM on the
    # thread's database thread.
    def enqueue_here(*args: str) -> None:
        pool.submit(contextvars.copy_context().run, in_worker, *args)

    async def enqueue_here_async(*args: str) -> bool:
        enqueue_here(*args)
        return True  # taken at once, as the broker does

    queueing.enqueue_run = timed("web: enqueue (in-process stand-in)", enqueue_here_async)


# -- driving the ASGI application ---------------------------------------------------------------


def body(n: int) -> bytes:
    message = {"kind": "message", "messageId": f"count-{n}-{secrets.token_hex(4)}",
               "role": "user", "parts": [{"kind": "text", "text": "hello"}]}  # fmt: skip
    envelope = {"jsonrpc": "2.0", "id": n, "method": "message/send", "params": {"message": message}}
    return json.dumps(envelope).encode()


async def call(app: Any, path: str, payload: bytes) -> dict[str, Any]:
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 50000),
        "headers": [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
                    (b"content-length", str(len(payload)).encode())],
    }  # fmt: skip
    sent = False
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": payload, "more_body": False}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return json.loads(b"".join(chunks))


async def measure(app: Any, slug: str, requests: int) -> dict[str, Any]:
    path = f"/agents/{slug}/jsonrpc/"
    for n in range(20):  # warm caches, pools, imports
        check(await call(app, path, body(n)))
    await asyncio.sleep(0.3)
    STATS.clear()
    TIMES.clear()
    t0, c0 = time.perf_counter(), time.process_time()
    for n in range(requests):
        check(await call(app, path, body(1000 + n)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    await asyncio.sleep(0.3)
    return {"wall_ms": 1000 * wall / requests, "cpu_ms": 1000 * cpu / requests}


def check(answer: dict[str, Any]) -> None:
    state = (answer.get("result") or {}).get("status", {}).get("state")
    if state != "completed":
        raise SystemExit(f"unexpected answer: {json.dumps(answer)[:300]}")


def print_mode(slug: str, totals: dict[str, Any], requests: int) -> None:
    cpu, wall = totals["cpu_ms"], totals["wall_ms"]
    print(f"\n=== {slug}: {requests} sequential requests; process CPU {cpu:.2f} ms/request, "
          f"wall {wall:.2f} ms/request")  # fmt: skip
    for kind in sorted(STATS):
        counter = STATS[kind]
        print(f"  {kind}: {sum(counter.values()) / requests:.2f} per request")
        for key, value in counter.most_common():
            print(f"    {value / requests:6.2f}  {key}")
    print("  steps (per request: wall ms, thread CPU ms, calls):")
    for label, (wall, cpu, n) in sorted(TIMES.items()):
        cpu_text = f"{1000 * cpu / requests:6.2f}" if cpu else "     -"
        print(f"    {1000 * wall / requests:6.2f} {cpu_text} {n / requests:5.2f}  {label}")


def time_enqueue(samples: int = 200) -> float:
    """The real Celery enqueue (`run_task.delay`) of a job nobody will claim."""
    from tasks.jobs import run_task

    t0 = time.process_time()
    for _ in range(samples):
        run_task.delay("00000000-0000-0000-0000-000000000000", "queued:none")
    return 1000 * (time.process_time() - t0) / samples


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-n", "--requests", type=int, default=200)
    p.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432")
    p.add_argument("--redis", default="redis://127.0.0.1:6379/8")
    args = p.parse_args()
    args.requests = max(1, min(args.requests, 5000))
    logs = Path(tempfile.mkdtemp(prefix="a2ahub-count-"))
    bench = bench_run.Bench(args, logs, pin=False, tag=f"count{os.getpid()}")
    try:
        url = bench_run.create_database(bench, f"a2abench_{bench.tag}")
        bench_run.flush_redis(bench)
        env = bench_run.hub_env(url.replace("postgresql://", "postgres://"), args.redis, logs)
        bench_run.prepare_hub(bench, env)
        os.environ.update(env)
        return asyncio.run(count_both(args.requests))
    finally:
        with contextlib.suppress(Exception):
            bench_run.flush_redis(bench)
        from django.db import connections

        connections.close_all()
        with contextlib.suppress(Exception):
            connections["default"].close_pool()
        bench_run.drop_databases(bench)
        shutil.rmtree(logs, ignore_errors=True)


async def count_both(requests: int) -> int:
    import django

    django.setup()
    from a2ahub.asgi import application

    instrument_database()
    instrument_asyncpg()
    instrument_redis()
    instrument_threads()
    instrument_steps()
    for slug in ("echo", "echo-worker"):
        totals = await measure(application, slug, requests)
        print_mode(slug, totals, requests)
    print(f"\nreal run_task.delay (Celery enqueue): {time_enqueue():.2f} ms CPU each")
    return 0


if __name__ == "__main__":
    sys.exit(main())
