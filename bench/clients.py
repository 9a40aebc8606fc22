"""Is the second HTTP client and the second database driver worth its cost? Run by hand:

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<db> python bench/clients.py [rounds]

(a) Webhook deliveries: aiohttp (what `a2ahub/outbound_pool.py` uses) against
    httpx.AsyncClient, both HTTP/1.1 with a kept-alive pool of PUSH_CONCURRENCY connections,
    POSTing a 600-byte JSON body to the same receiver on 127.0.0.1 (a separate process, so
    its CPU is not counted), with 1 and 32 requests in flight.
(b) The one-statement task write from the event loop: asyncpg (what `a2ahub/asyncdb.py`
    uses) against psycopg's AsyncConnectionPool, at 1 and 16 concurrent writers, running a
    statement shaped like `tasks/sql.py:record_sql` (one UPDATE of the task and INSERTs of
    its message and event in one `WITH ... INSERT` statement) on scratch tables.

The two sides alternate in every round so that a machine busy with other work slows both
alike; the output is each round's ratios (CPU per operation and throughput, second library /
first) and their median and spread. CPU is this process's (client side only).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import socket
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable

import aiohttp
import asyncpg
import httpx
import orjson
import psycopg
from psycopg.types.json import Jsonb, set_json_dumps
from psycopg_pool import AsyncConnectionPool

POOL = 200  # settings.PUSH_CONCURRENCY's default
BODY = orjson.dumps({"statusUpdate": {"taskId": str(uuid.uuid4()), "status": {"state": "working",
                    "message": {"parts": [{"text": "x" * 400}]}}}})  # fmt: skip
HEADERS = {"Content-Type": "application/a2a+json", "User-Agent": "A2A-Hub/bench",
           "X-A2A-Notification-Token": "t" * 32, "Accept-Encoding": "identity"}  # fmt: skip
ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{}"


# --- A kept-alive receiver in its own process ---------------------------------------------


class Receiver(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].lower()
            start = head.find(b"content-length:")
            length = int(head[start + 15 :].split(b"\r\n", 1)[0]) if start >= 0 else 0
            if len(self.buffer) < end + 4 + length:
                return
            self.buffer = self.buffer[end + 4 + length :]
            self.transport.write(ANSWER)  # type: ignore[attr-defined]


def serve(sock: socket.socket) -> None:
    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(Receiver, sock=sock)
        await server.serve_forever()

    asyncio.run(main())


# --- Timing -------------------------------------------------------------------------------


async def timed(
    n: int, concurrency: int, one: Callable[[], Awaitable[None]]
) -> tuple[float, float]:
    """(CPU seconds per operation, operations per second) for `n` calls `concurrency` at once."""
    left = n

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await one()

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return cpu / n, n / wall


async def both(
    n: int, concurrency: int, sides: dict[str, Callable[[], Awaitable[None]]], flip: bool
) -> dict[str, tuple[float, float]]:
    """Both sides one after the other, the second first in every other round."""
    order = list(sides)[::-1] if flip else list(sides)
    return {name: await timed(n, concurrency, sides[name]) for name in order}


async def http_round(
    url: str, n: int, concurrency: int, flip: bool
) -> dict[str, tuple[float, float]]:
    connector = aiohttp.TCPConnector(limit=POOL, limit_per_host=0)
    async with aiohttp.ClientSession(connector=connector, trust_env=False,
                                     auto_decompress=False) as session:  # fmt: skip

        async def by_aiohttp() -> None:
            async with session.post(url, data=BODY, headers=HEADERS, allow_redirects=False) as r:
                await r.read()

        limits = httpx.Limits(max_connections=POOL, max_keepalive_connections=POOL)
        async with httpx.AsyncClient(trust_env=False, limits=limits, timeout=10.0) as client:

            async def by_httpx() -> None:
                response = await client.post(url, content=BODY, headers=HEADERS)
                await response.aread()

            await timed(200, concurrency, by_aiohttp)  # open the connections, warm up
            await timed(200, concurrency, by_httpx)
            return await both(n, concurrency, {"aiohttp": by_aiohttp, "httpx": by_httpx}, flip)


# --- The one-statement write ----------------------------------------------------------------

SCHEMA = """
DROP TABLE IF EXISTS bench_event, bench_message, bench_task;
CREATE TABLE bench_task (id uuid PRIMARY KEY, state text, version int, updated_at timestamptz,
                         metadata jsonb);
CREATE TABLE bench_message (id bigserial PRIMARY KEY, task_id uuid, body jsonb,
                            created_at timestamptz);
CREATE TABLE bench_event (id bigserial PRIMARY KEY, task_id uuid, kind text, body jsonb,
                          created_at timestamptz);
"""
WRITE = """
WITH task AS (UPDATE bench_task SET state = %s, version = version + 1, updated_at = now()
              WHERE id = %s RETURNING id, version),
     message AS (INSERT INTO bench_message (task_id, body, created_at)
                 SELECT id, %s, now() FROM task RETURNING id)
INSERT INTO bench_event (task_id, kind, body, created_at)
SELECT task.id, %s, %s, now() FROM task, message
RETURNING bench_event.id, (SELECT version FROM task)
"""


def native(sql: str) -> str:
    pieces = sql.split("%s")
    return "".join(f"{p}${n}" for n, p in enumerate(pieces[:-1], start=1)) + pieces[-1]


def prepare_tables(dsn: str, tasks: list[uuid.UUID]) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(SCHEMA)
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO bench_task VALUES (%s, 'submitted', 0, now(), '{}')",
                            [(t,) for t in tasks])  # fmt: skip


async def db_round(
    dsn: str, tasks: list[uuid.UUID], n: int, concurrency: int, flip: bool, size: int = 0
) -> dict[str, tuple[float, float]]:
    body = {"role": "agent", "parts": [{"text": "done " * 20}], "messageId": str(uuid.uuid4())}
    event = {"statusUpdate": {"status": {"state": "working"}}}
    turn = iter(range(10**9))

    async def encode(conn: asyncpg.Connection) -> None:
        await conn.set_type_codec("jsonb", encoder=lambda v: b"\x01" + orjson.dumps(v),
                                  decoder=lambda b: orjson.loads(b[1:]), schema="pg_catalog",
                                  format="binary")  # fmt: skip

    set_json_dumps(lambda value: orjson.dumps(value).decode())  # orjson on both sides
    apg = await asyncpg.create_pool(
        dsn, min_size=size or concurrency, max_size=size or concurrency, init=encode
    )
    size = size or concurrency
    ppg = AsyncConnectionPool(dsn, min_size=size, max_size=size, open=False,
                              kwargs={"autocommit": True, "prepare_threshold": 0})  # fmt: skip
    await ppg.open(wait=True)
    statement = native(WRITE)
    try:

        async def by_asyncpg() -> None:
            task = tasks[next(turn) % len(tasks)]
            async with apg.acquire() as conn:
                await conn.fetch(statement, "working", task, body, "status", event)

        async def by_psycopg() -> None:
            task = tasks[next(turn) % len(tasks)]
            async with ppg.connection() as conn:
                cur = await conn.execute(
                    WRITE, ("working", task, Jsonb(body), "status", Jsonb(event))
                )
                await cur.fetchall()

        await timed(200, concurrency, by_asyncpg)
        await timed(200, concurrency, by_psycopg)
        return await both(n, concurrency, {"asyncpg": by_asyncpg, "psycopg": by_psycopg}, flip)
    finally:
        await apg.close()
        await ppg.close()


# --- Report ---------------------------------------------------------------------------------


def summary(
    name: str, first: str, second: str, rounds: list[dict[str, tuple[float, float]]]
) -> str:
    cpu = [r[second][0] / r[first][0] for r in rounds]
    rate = [r[second][1] / r[first][1] for r in rounds]
    us = statistics.median(r[first][0] for r in rounds) * 1e6
    us2 = statistics.median(r[second][0] for r in rounds) * 1e6
    per_s = statistics.median(r[first][1] for r in rounds)
    per_s2 = statistics.median(r[second][1] for r in rounds)
    return (
        f"| {name} | {us:.0f} µs / {us2:.0f} µs | CPU {statistics.median(cpu):.2f}x "
        f"({min(cpu):.2f}-{max(cpu):.2f}) | {per_s:.0f}/s / {per_s2:.0f}/s | "
        f"rate {statistics.median(rate):.2f}x ({min(rate):.2f}-{max(rate):.2f}) |"
    )


async def main(rounds: int) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    receiver = multiprocessing.Process(target=serve, args=(sock,), daemon=True)
    receiver.start()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/webhook"
    dsn = os.environ["DATABASE_URL"]
    tasks = [uuid.uuid4() for _ in range(2000)]
    prepare_tables(dsn, tasks)
    lines = [
        "| case | CPU per op, first / second | CPU ratio (spread) | rate | rate ratio (spread) |",
        "|---|---|---|---|---|",
    ]
    for concurrency in (1, 32) if "db" not in sys.argv else ():
        results = [await http_round(url, 3000, concurrency, i % 2 == 1) for i in range(rounds)]
        lines.append(
            summary(f"webhook POST c={concurrency}, aiohttp / httpx", "aiohttp", "httpx", results)
        )
        print(lines[-1], flush=True)
    # The last case is the server's shape: more writers than connections (pool max_size 10).
    for concurrency, size in ((1, 0), (16, 0), (64, 10)):
        results = [
            await db_round(dsn, tasks, 3000, concurrency, i % 2 == 1, size) for i in range(rounds)
        ]
        lines.append(
            summary(
                f"task write c={concurrency} pool {size or concurrency}, asyncpg / psycopg",
                "asyncpg",
                "psycopg",
                results,
            )
        )
        print(lines[-1], flush=True)
    receiver.terminate()
    print("\n".join(lines))


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
