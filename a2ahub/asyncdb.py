"""PostgreSQL from the server's event loop, for the writes on the A2A hot path.

Django's ORM is synchronous: from async code every call hops to a thread and back, and under
ASGI each request gets a thread of its own for that. A fast agent's turn is one statement
(`tasks/sql.py` builds it), so the hop, not the statement, was most of its cost. Here such
statements run on a psycopg async pool, one pool per event loop, with the connection settings
of Django's default database.

Only requests served by the hub's own ASGI app turn this on (`enabled`); anything else (the
test client, management commands, worker jobs) keeps to the ORM and its transactions.

psycopg_pool opens, grows and closes the connections; the warm ones are lent from a list of
this loop's own (`Lender`), since the pool's lock forms a convoy under load: an asyncio lock
that has waiters goes to them one loop turn at a time, and every newcomer queues behind them.
At 16 concurrent streams a statement waited ten loop turns for a connection and ten more to
give it back, which was most of a stream's wait for its first event.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from django.conf import settings
from django.db import connections
from psycopg import AsyncConnection, AsyncRawCursor
from psycopg.pq import TransactionStatus
from psycopg_pool import AsyncConnectionPool, PoolTimeout

enabled: ContextVar[bool] = ContextVar("a2ahub_asyncdb_enabled", default=False)

# How long a connection stays in a loop's own list before it goes back through the pool,
# whose checks (its age, its state) then apply to it.
LEND_SECONDS = 60.0


@dataclass
class Lent:
    """A connection had from the pool, with a cursor of its own (kept: psycopg keeps the
    adapters a statement's parameters need per cursor, while it runs the same statement) and
    when it came from the pool."""

    conn: AsyncConnection[Any]
    cursor: AsyncRawCursor[Any]
    since: float

    @property
    def due(self) -> bool:
        return time.monotonic() - self.since > LEND_SECONDS


class Lender:
    """The connections of one loop's pool, lent here. Once the pool has given out what it may,
    a caller waits here for one to be given back. Everything runs on the loop's thread, so
    none of this needs a lock, and a caller that finds a connection idle takes it at once."""

    def __init__(self, pool: AsyncConnectionPool, size: int, timeout: float) -> None:
        self.pool = pool
        self.size = size  # how many this lender may have from the pool at once
        self.timeout = timeout
        self.lent = 0  # had from the pool and not given back to it
        # First in first out, so that each is soon due back at the pool.
        self.idle: deque[Lent] = deque()
        self.waiting: deque[asyncio.Future[None]] = deque()

    @asynccontextmanager
    async def cursor(self) -> AsyncIterator[AsyncRawCursor[Any]]:
        lent = await self.take()
        try:
            yield lent.cursor
        finally:
            await self.give_back(lent)

    async def take(self) -> Lent:
        try:
            async with asyncio.timeout(self.timeout):
                while True:
                    while self.idle:
                        lent = self.idle.popleft()
                        if not lent.due:
                            return lent
                        await self.return_to_pool(lent)
                    if self.lent < self.size:
                        return await self.take_from_pool()
                    waiter = asyncio.get_running_loop().create_future()
                    self.waiting.append(waiter)
                    await waiter  # woken when a connection is given back
        except TimeoutError:
            raise PoolTimeout(f"no database connection within {self.timeout} s") from None

    async def take_from_pool(self) -> Lent:
        self.lent += 1
        try:
            conn = await self.pool.getconn()
        except BaseException:
            self.lent -= 1
            raise
        return Lent(conn, AsyncRawCursor(conn), time.monotonic())

    async def give_back(self, lent: Lent) -> None:
        if lent.conn.pgconn.transaction_status == TransactionStatus.IDLE and not lent.due:
            self.idle.append(lent)
        else:
            await self.return_to_pool(lent)  # the pool rolls back, replaces or renews it
        while self.waiting:
            waiter = self.waiting.popleft()
            if not waiter.done():  # (one that timed out is done)
                waiter.set_result(None)
                break

    async def return_to_pool(self, lent: Lent) -> None:
        self.lent -= 1
        await lent.cursor.close()
        await self.pool.putconn(lent.conn)

    async def close(self) -> None:
        idle, self.idle = self.idle, deque()
        for lent in idle:
            await self.return_to_pool(lent)
        await self.pool.close()


# The lender of each loop, as the task that opens its pool: the first callers all wait for it.
_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Task[Lender]] = (
    weakref.WeakKeyDictionary()
)


def available() -> bool:
    return enabled.get() and on_postgresql()


@cache
def on_postgresql() -> bool:
    return "postgresql" in str(settings.DATABASES["default"]["ENGINE"])


@lru_cache(maxsize=512)
def native(sql: str) -> str:
    """`%s` placeholders as PostgreSQL's own `$n`. psycopg converts a query on each run and
    caches only short ones with few parameters; a turn's statement is neither, but its shape
    repeats, so it is converted here once per shape. (The statements we build have no other
    `%` in them.)"""
    pieces = sql.split("%s")
    return "".join(f"{piece}${n}" for n, piece in enumerate(pieces[:-1], start=1)) + pieces[-1]


def connection_kwargs() -> dict[str, Any]:
    params = dict(connections["default"].get_connection_params())
    # Django's sync cursor class does not fit an async connection; psycopg's default does.
    params.pop("cursor_factory", None)
    params["autocommit"] = True
    # The statements run here repeat a few shapes thousands of times: prepared, PostgreSQL
    # skips parsing and planning them (Django leaves this off for poolers' sake; so may we).
    params["prepare_threshold"] = settings.DATABASE_PREPARE_THRESHOLD
    return params


async def pool() -> Lender:
    loop = asyncio.get_running_loop()
    opening = _pools.get(loop)
    if opening is None or (opening.done() and not usable(opening)):
        # (A pool that failed to open, the database being down say, is tried again.)
        opening = _pools[loop] = loop.create_task(open_pool())
    return await asyncio.shield(opening)


async def open_pool() -> Lender:
    database: dict[str, Any] = settings.DATABASES["default"]
    options: dict[str, Any] = database.get("OPTIONS", {}).get("pool", {})
    size, timeout = int(options.get("max_size", 10)), float(options.get("timeout", 10))
    opened = AsyncConnectionPool(
        kwargs=connection_kwargs(),
        min_size=1,
        max_size=size,
        timeout=timeout,
        connection_class=AsyncConnection,
        open=False,
        name="a2ahub-async",
    )
    await opened.open()
    return Lender(opened, size, timeout)


async def execute(sql: str, params: Sequence[Any], fetch: bool = False) -> list[tuple[Any, ...]]:
    """Run one statement in autocommit (atomic on its own); its rows if `fetch`."""
    async with (await pool()).cursor() as cursor:
        await cursor.execute(native(sql), params)
        return list(await cursor.fetchall()) if fetch else []


async def close() -> None:
    """Close this loop's pool (a loop that ends closes its pool first)."""
    opening = _pools.pop(asyncio.get_running_loop(), None)
    if opening is not None and usable(opening):
        await opening.result().close()


def usable(opening: asyncio.Task[Lender]) -> bool:
    return opening.done() and not opening.cancelled() and opening.exception() is None
