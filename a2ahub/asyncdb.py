"""PostgreSQL from the server's event loop, for the writes on the A2A hot path.

Django's ORM is synchronous: from async code every call hops to a thread and back, and under
ASGI each request gets a thread of its own for that. A fast agent's turn is one statement
(`tasks/sql.py` builds it), so the hop, not the statement, was most of its cost. Here such
statements run on an asyncpg pool, one pool per event loop, with the connection settings of
Django's default database.

asyncpg rather than psycopg's async connections: under load psycopg_pool's asyncio lock
formed a convoy (waiters get it one loop turn at a time, newcomers queue behind them), and
each psycopg wait registers and unregisters the socket with the loop; asyncpg keeps each
connection's socket as a protocol of the loop and hands out pooled connections from a queue.
bench/clients.py: with more writers than connections psycopg_pool cost 1.26x the CPU per
write and wrote 0.77x as many per second.

Requests served by the hub's own ASGI app and worker jobs turn this on (`enabled`); anything
else (management commands, the admin) keeps to the ORM and its transactions.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import Sequence
from contextvars import ContextVar
from functools import cache, lru_cache
from typing import Any

import asyncpg
import orjson
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, OperationalError, connections
from psycopg.types.json import Jsonb

from a2ahub import background, outages

enabled: ContextVar[bool] = ContextVar("a2ahub_asyncdb_enabled", default=False)
# At most this many connections for the pool of a loop whose first statement is made with it
# set (a worker's job loop); else the database's setting.
pool_size: ContextVar[int | None] = ContextVar("a2ahub_asyncdb_pool_size", default=None)

# What asyncpg raises when the database is away (refused, shutting down, the connection cut):
# raised again as Django's OperationalError, which the ORM's connections raise for the same,
# so that callers tell an away database from a bad statement one way on both paths.
UNREACHABLE = (
    OSError,  # TimeoutError too
    asyncpg.PostgresConnectionError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.CrashShutdownError,
    asyncpg.exceptions.CannotConnectNowError,
)

# What asyncpg raises for a connection whose server said goodbye (a restart's "terminating
# connection") when it is used before the loop has read its end: the driver refuses to send
# ("cannot switch to state 12; another operation (2) is in progress"), so nothing was sent.
STALE = (asyncpg.exceptions.InternalClientError,)

# The pool of each loop, as the task that opens it: the first callers all wait for the same one.
_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Task[asyncpg.Pool]] = (
    weakref.WeakKeyDictionary()
)


def available() -> bool:
    return enabled.get() and on_postgresql()


@cache
def on_postgresql() -> bool:
    return "postgresql" in str(settings.DATABASES["default"]["ENGINE"])


@lru_cache(maxsize=512)
def native(sql: str) -> str:
    """`%s` placeholders as PostgreSQL's own `$n`, converted once per shape of statement.
    (The statements we build have no other `%` in them.)"""
    pieces = sql.split("%s")
    return "".join(f"{piece}${n}" for n, piece in enumerate(pieces[:-1], start=1)) + pieces[-1]


# Django's connection parameters (psycopg's names) that asyncpg takes under another name or
# not at all.
RENAMED = {"dbname": "database", "sslmode": "ssl", "connect_timeout": "timeout"}
IGNORED = {"client_encoding", "cursor_factory", "context", "prepare_threshold"}


def asyncpg_kwargs(params: dict[str, Any]) -> dict[str, Any]:
    """asyncpg's arguments for the connection Django makes with psycopg's `params`."""
    kwargs: dict[str, Any] = {}
    server_settings: dict[str, str] = {}
    for name, value in params.items():
        if name in IGNORED or value is None:
            continue
        if name == "application_name":
            server_settings[name] = str(value)
        elif name in RENAMED:
            kwargs[RENAMED[name]] = float(value) if name == "connect_timeout" else value
        elif name in {"host", "port", "user", "password", "passfile"}:
            kwargs[name] = value
        else:
            raise ImproperlyConfigured(
                f"DATABASE_URL: the option {name!r} is not supported for the event loop's "
                "connections."
            )
    if server_settings:
        kwargs["server_settings"] = server_settings
    return kwargs


async def pool() -> asyncpg.Pool:
    loop = asyncio.get_running_loop()
    opening = _pools.get(loop)
    if opening is None or (opening.done() and not usable(opening)):
        # (A pool that failed to open, the database being down say, is tried again.)
        opening = _pools[loop] = loop.create_task(open_pool(pool_size.get()))
    return await asyncio.shield(opening)


async def open_pool(max_size: int | None = None) -> asyncpg.Pool:
    database: dict[str, Any] = settings.DATABASES["default"]
    options: dict[str, Any] = database.get("OPTIONS", {}).get("pool", {})
    most = int(options.get("max_size", 10))
    return await asyncpg.create_pool(
        # No floor of connections: asyncpg refills one in the background, and while the
        # database is away it logs a traceback for each try.
        min_size=0,
        max_size=most if max_size is None else min(most, max_size),
        max_inactive_connection_lifetime=float(options.get("max_idle", 300.0)),
        # The statements run here repeat a few shapes thousands of times: prepared, PostgreSQL
        # skips parsing and planning them (off for poolers in transaction mode).
        statement_cache_size=100 if settings.DATABASE_PREPARE_THRESHOLD is not None else 0,
        init=set_codecs,
        # Autocommit statements leave no session state behind: nothing to reset on release
        # (asyncpg's default reset is one more round trip per statement).
        reset=keep_as_is,
        **asyncpg_kwargs(connections["default"].get_connection_params()),
    )


async def set_codecs(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec(
        "jsonb", schema="pg_catalog", format="binary", encoder=encode_jsonb, decoder=decode_jsonb
    )


def encode_jsonb(value: Any) -> bytes:
    return b"\x01" + orjson.dumps(value)  # jsonb's binary form: a version byte, then the text


def decode_jsonb(data: bytes) -> Any:
    return json.loads(data[1:])


async def keep_as_is(conn: asyncpg.Connection) -> None:
    return None


async def execute(sql: str, params: Sequence[Any], fetch: bool = False) -> list[tuple[Any, ...]]:
    """Run one statement in autocommit (atomic on its own); its rows if `fetch`."""
    # JSON comes wrapped for psycopg (the same statements run on Django's connection); the
    # jsonb codec above takes the value itself.
    values = [p.obj if isinstance(p, Jsonb) else p for p in params]
    try:
        try:
            rows = await run(native(sql), values, fetch)
        except STALE:
            # A connection from before a restart, which had the server's goodbye but not yet
            # its end: the statement never left. Once more on a new connection.
            rows = await run(native(sql), values, fetch)
    except (*UNREACHABLE, *STALE) as exc:
        outages.DATABASE.failed(exc)
        # Every idle connection is from before the restart too: each is replaced when next
        # taken, rather than failing a request of its own first.
        await forget_connections()
        raise OperationalError(f"the database cannot be reached: {exc}") from exc
    except asyncpg.IntegrityConstraintViolationError as exc:
        # As the ORM's connections raise it, so callers catch one class on both paths.
        raise IntegrityError(str(exc)) from exc
    outages.DATABASE.answered()
    return rows


async def run(statement: str, values: list[Any], fetch: bool) -> list[tuple[Any, ...]]:
    shared = await pool()
    conn = await shared.acquire()
    try:
        if fetch:
            return [tuple(row) for row in await conn.fetch(statement, *values)]
        await conn.execute(statement, *values)
        return []
    except STALE:
        await forget_connections()
        conn.terminate()  # closing it politely would wait on a protocol that is stuck
        raise
    finally:
        give_back(shared, conn)


def give_back(shared: asyncpg.Pool, conn: asyncpg.Connection) -> None:
    """Return the connection to the pool without waiting: asyncpg's release takes a few loop
    turns (it runs in a task of its own), which the write's caller (a stream waiting for the
    event it wrote) would otherwise wait through too."""
    background.keep(asyncio.ensure_future(shared.release(conn)))


async def forget_connections() -> None:
    """Replace each of this loop's connections when it is next taken."""
    opening = _pools.get(asyncio.get_running_loop())
    if opening is not None and usable(opening):
        await opening.result().expire_connections()


async def close() -> None:
    """Close this loop's pool (a loop that ends closes its pool first)."""
    opening = _pools.pop(asyncio.get_running_loop(), None)
    if opening is not None and usable(opening):
        await opening.result().close()


def usable(opening: asyncio.Task[asyncpg.Pool]) -> bool:
    return opening.done() and not opening.cancelled() and opening.exception() is None
