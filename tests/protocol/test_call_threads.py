"""Where a door call's ORM work runs: on a thread lent to that call alone, kept for later calls
rather than started for each (the loop waited for every start), with the call's connection
handed back to the pool when the call ends."""

from __future__ import annotations

import asyncio
import threading

import pytest
from asgiref.sync import sync_to_async
from django.db import connection

from protocol.door import request_context
from tasks.models import Task
from tests.helpers import postgresql_only

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


def call_threads() -> set[int]:
    return {t.ident or 0 for t in threading.enumerate() if t.name.startswith("a2ahub-call-db")}


async def test_calls_at_once_each_have_a_thread_of_their_own() -> None:
    inside = asyncio.Barrier(3)

    async def one_call() -> int:
        async with request_context():
            ident = await sync_to_async(threading.get_ident)()
            await inside.wait()  # all three calls are under way at once
            assert await sync_to_async(threading.get_ident)() == ident  # and stay there
            return ident

    idents = await asyncio.gather(one_call(), one_call(), one_call())

    assert len(set(idents)) == 3
    assert threading.get_ident() not in idents


async def test_calls_one_after_another_start_no_thread_and_reuse_one() -> None:
    async def one_call() -> int:
        async with request_context():
            await sync_to_async(Task.objects.count)()
            return await sync_to_async(threading.get_ident)()

    first = await one_call()
    threads = call_threads()

    later = [await one_call() for _ in range(10)]

    assert set(later) == {first}
    assert call_threads() == threads


@postgresql_only("SQLite's test database is one connection that is never closed")
async def test_a_calls_connection_goes_back_when_the_call_ends() -> None:
    async with request_context():
        await sync_to_async(Task.objects.count)()
        assert await sync_to_async(lambda: connection.connection is not None)()

    async with request_context():  # the same thread (the previous test shows it)
        assert await sync_to_async(lambda: connection.connection is None)()
