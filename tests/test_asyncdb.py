"""The event loop's database connections (PostgreSQL): a loop lends its idle connections
without the pool's lock, waits for one to be given back once it has as many as it may, gives
up after its timeout, and sends a connection it cannot trust back through the pool."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from django.conf import settings
from psycopg import AsyncConnection
from psycopg.pq import TransactionStatus
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from a2ahub.asyncdb import Lender, connection_kwargs

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql",
        reason="the loop's connections are PostgreSQL's",
    ),
]


@pytest.fixture
async def lender(db: None) -> AsyncIterator[Lender]:
    pool = AsyncConnectionPool(
        kwargs=connection_kwargs(), min_size=1, max_size=2, timeout=5,
        connection_class=AsyncConnection, open=False,
    )  # fmt: skip
    await pool.open()
    lending = Lender(pool, size=1, timeout=0.5)
    yield lending
    await lending.close()


async def backend_of(lender: Lender) -> int:
    async with lender.cursor() as cursor:
        await cursor.execute("SELECT pg_backend_pid()")
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


async def test_statements_one_after_another_run_on_the_same_connection(lender: Lender) -> None:
    first, second = await backend_of(lender), await backend_of(lender)

    assert first == second
    assert lender.lent == 1 and len(lender.idle) == 1


async def test_a_caller_waits_for_the_connection_another_gives_back(lender: Lender) -> None:
    held = await lender.take()
    waiting = asyncio.ensure_future(lender.take())
    await asyncio.sleep(0.05)
    assert not waiting.done()  # the lender may have one connection, and it is lent

    await lender.give_back(held)
    got = await asyncio.wait_for(waiting, 1)

    assert got.conn is held.conn
    await lender.give_back(got)


async def test_a_caller_that_waits_past_the_timeout_gets_a_pool_timeout(lender: Lender) -> None:
    held = await lender.take()

    with pytest.raises(PoolTimeout):
        await lender.take()

    await lender.give_back(held)
    assert await backend_of(lender) > 0  # the lender still works after a caller gave up


async def test_a_connection_left_in_a_transaction_goes_back_through_the_pool(
    lender: Lender,
) -> None:
    held = await lender.take()
    await held.cursor.execute("BEGIN")
    assert held.conn.pgconn.transaction_status == TransactionStatus.INTRANS

    await lender.give_back(held)

    assert lender.lent == 0 and not lender.idle
    again = await lender.take()
    assert again.conn.pgconn.transaction_status == TransactionStatus.IDLE
    await lender.give_back(again)
