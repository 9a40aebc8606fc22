"""PostgreSQL from the server's event loop, for the writes on the A2A hot path.

Django's ORM is synchronous: from async code every call hops to a thread and back, and under
ASGI each request gets a thread of its own for that. A fast agent's turn is one statement
(`tasks/sql.py` builds it), so the hop, not the statement, was most of its cost. Here such
statements run on a psycopg async pool, one pool per event loop, with the connection settings
of Django's default database.

Only requests served by the hub's own ASGI app turn this on (`enabled`); anything else (the
test client, management commands, worker jobs) keeps to the ORM and its transactions.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Sequence
from contextvars import ContextVar
from functools import cache, lru_cache
from typing import Any

from django.conf import settings
from django.db import connections
from psycopg import AsyncConnection, AsyncRawCursor
from psycopg_pool import AsyncConnectionPool

enabled: ContextVar[bool] = ContextVar("a2ahub_asyncdb_enabled", default=False)

# The pool of each loop, as the task that opens it: the first callers all wait for the same one.
_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Task[AsyncConnectionPool]] = (
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


async def pool() -> AsyncConnectionPool:
    loop = asyncio.get_running_loop()
    opening = _pools.get(loop)
    if opening is None or (opening.done() and not usable(opening)):
        # (A pool that failed to open, the database being down say, is tried again.)
        opening = _pools[loop] = loop.create_task(open_pool())
    return await asyncio.shield(opening)


async def open_pool() -> AsyncConnectionPool:
    database: dict[str, Any] = settings.DATABASES["default"]
    options: dict[str, Any] = database.get("OPTIONS", {}).get("pool", {})
    opened = AsyncConnectionPool(
        kwargs=connection_kwargs(),
        min_size=1,
        max_size=int(options.get("max_size", 10)),
        timeout=float(options.get("timeout", 10)),
        connection_class=AsyncConnection,
        open=False,
        name="a2ahub-async",
    )
    await opened.open()
    return opened


async def execute(sql: str, params: Sequence[Any], fetch: bool = False) -> list[tuple[Any, ...]]:
    """Run one statement in autocommit (atomic on its own); its rows if `fetch`."""
    async with (await pool()).connection() as conn, AsyncRawCursor(conn) as cursor:
        await cursor.execute(native(sql), params)
        return list(await cursor.fetchall()) if fetch else []


async def close() -> None:
    """Close this loop's pool (a loop that ends closes its pool first)."""
    opening = _pools.pop(asyncio.get_running_loop(), None)
    if opening is not None and usable(opening):
        await opening.result().close()


def usable(opening: asyncio.Task[AsyncConnectionPool]) -> bool:
    return opening.done() and not opening.cancelled() and opening.exception() is None
