"""The bus seam, in this process and over a real Redis: subscribers hear what is published,
as it was published here and decoded from elsewhere, once each; a publish never fails its
caller while Redis is away, nor is lost right after Redis restarts; a subscription comes back
after Redis restarts, and says so."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
import redis
import redis.asyncio

from a2ahub import bus
from tests.helpers import eventually
from tests.integration.servers import RedisServer
from tests.integration.stack import with_path

pytestmark = pytest.mark.anyio

REDIS_URL = os.environ.get("REDIS_URL", "")
ELSEWHERE = b"0f" * 16  # another process's origin
WITHIN = 5.0


@pytest.fixture(params=["in-process", "redis"])
def each_bus(request: pytest.FixtureRequest) -> bus.InProcessBus:
    if request.param == "in-process":
        return bus.for_url("")
    if not REDIS_URL:
        pytest.skip("needs REDIS_URL (the real stack)")
    return bus.for_url(REDIS_URL)


@pytest.fixture
def channel() -> str:
    return f"test:bus:{uuid.uuid4().hex}"


def dumps(message: Any) -> bytes:
    return orjson.dumps(message)


class Heard:
    """What a subscriber heard, and a way to wait for it."""

    def __init__(self) -> None:
        self.messages: list[Any] = []
        self.threads: set[str] = set()

    def __call__(self, message: Any) -> None:
        self.messages.append(message)
        self.threads.add(threading.current_thread().name)

    async def wait_for(self, count: int, timeout: float = WITHIN) -> list[Any]:
        async with asyncio.timeout(timeout):
            while len(self.messages) < count:
                await asyncio.sleep(0.01)
        return self.messages


async def test_a_subscriber_hears_what_another_thread_published_as_it_was_published(
    each_bus: bus.InProcessBus, channel: str
) -> None:
    heard = Heard()
    listening = await each_bus.subscribe(channel, heard, decode=orjson.loads)
    message = {"task": "t-1", "n": 1}
    try:
        await asyncio.to_thread(each_bus.publish, channel, message, dumps)
        assert await heard.wait_for(1) == [message]
        assert heard.messages[0] is message  # here, nothing was encoded
        assert heard.threads == {threading.current_thread().name}  # on the subscriber's loop
        await asyncio.sleep(0.2)
        assert len(heard.messages) == 1  # Redis sent it back: skipped, not heard twice
    finally:
        each_bus.unsubscribe(listening)


async def test_messages_published_soon_from_a_loop_arrive_in_order(
    each_bus: bus.InProcessBus, channel: str
) -> None:
    heard = Heard()
    listening = await each_bus.subscribe(channel, heard)
    try:
        for n in range(20):
            each_bus.publish_soon(channel, str(n).encode())
        assert await heard.wait_for(20) == [str(n).encode() for n in range(20)]
    finally:
        each_bus.unsubscribe(listening)


async def test_a_subscriber_that_left_hears_nothing_more(
    each_bus: bus.InProcessBus, channel: str
) -> None:
    heard = Heard()
    listening = await each_bus.subscribe(channel, heard)
    each_bus.publish(channel, b"before")
    await heard.wait_for(1)
    each_bus.unsubscribe(listening)

    each_bus.publish(channel, b"after")
    await asyncio.sleep(0.2)

    assert heard.messages == [b"before"]
    assert not each_bus.subscribed(channel)


def test_code_without_a_loop_hears_messages_on_the_bus_s_own_thread(
    each_bus: bus.InProcessBus, channel: str
) -> None:
    heard = Heard()
    each_bus.subscribe_in_background(channel, heard)
    assert eventually(lambda: each_bus.subscribed(channel), timeout=WITHIN)
    if each_bus.distributed:  # the SUBSCRIBE goes out a moment after the registration
        client = redis.Redis.from_url(REDIS_URL)
        name = bus.channel_prefix(REDIS_URL) + channel
        assert eventually(lambda: client.pubsub_numsub(name)[0][1] == 1, timeout=WITHIN)

    each_bus.publish(channel, b"stop t-1")

    assert eventually(lambda: heard.messages == [b"stop t-1"], timeout=WITHIN)
    assert heard.threads == {"a2ahub-bus"}


def test_loops_of_many_threads_subscribing_at_once_each_hear_the_message(
    each_bus: bus.InProcessBus, channel: str
) -> None:
    """A web process subscribes from its door's loop, its job loops and its threads' loops at
    once (a send that waits for a worker's reply, say); none of them may fail for another."""
    threads, rounds = 8, 50
    start = threading.Barrier(threads)
    failures: list[BaseException] = []
    heard = [Heard() for _ in range(threads * rounds)]

    async def subscribe_and_hear(n: int) -> None:
        start.wait()
        listening = await each_bus.subscribe(f"{channel}:{n}", heard[n])
        try:
            each_bus.publish(f"{channel}:{n}", b"done")
            await heard[n].wait_for(1)
        finally:
            each_bus.unsubscribe(listening)

    def thread(first: int) -> None:
        for n in range(first, threads * rounds, threads):
            try:
                asyncio.run(subscribe_and_hear(n))
            except BaseException as exc:  # reported by the assertion below
                failures.append(exc)
                start.abort()
                return

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads change places as often as they can
    try:
        running = [threading.Thread(target=thread, args=(i,)) for i in range(threads)]
        for t in running:
            t.start()
        for t in running:
            t.join(timeout=60)
    finally:
        sys.setswitchinterval(switch)

    assert failures == []
    assert [h.messages for h in heard] == [[b"done"]] * (threads * rounds)


@pytest.mark.integration
async def test_another_process_s_message_arrives_decoded(channel: str) -> None:
    over_redis = bus.for_url(REDIS_URL)
    heard = Heard()
    listening = await over_redis.subscribe(channel, heard, decode=orjson.loads)
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.publish(
            bus.channel_prefix(REDIS_URL) + channel, ELSEWHERE + b" " + dumps({"from": "elsewhere"})
        )
        assert await heard.wait_for(1) == [{"from": "elsewhere"}]
    finally:
        over_redis.unsubscribe(listening)
        client.close()


@pytest.mark.integration
async def test_a_hub_hears_only_the_messages_of_its_own_redis_database(channel: str) -> None:
    """Redis pub/sub ignores database numbers: hubs sharing one server on different databases
    heard each other's task events and wake-ups."""
    on_13 = bus.RedisBus(with_path(REDIS_URL, "/13"))
    heard = Heard()
    listening = await on_13.subscribe(channel, heard, decode=orjson.loads)
    client = redis.Redis.from_url(REDIS_URL)
    try:
        for number in (0, 14, 13):
            name = bus.channel_prefix(with_path(REDIS_URL, f"/{number}")) + channel
            client.publish(name, ELSEWHERE + b" " + dumps({"database": number}))
        assert await heard.wait_for(1) == [{"database": 13}]
        await asyncio.sleep(0.2)
        assert heard.messages == [{"database": 13}]
    finally:
        on_13.unsubscribe(listening)
        client.close()


async def test_a_publish_while_redis_is_away_is_logged_and_does_not_fail_the_caller(
    channel: str, caplog: pytest.LogCaptureFixture
) -> None:
    away = bus.RedisBus(f"redis://127.0.0.1:{RedisServer().port}/0")  # nothing listens there
    caplog.set_level(logging.WARNING, logger="a2ahub.outages")
    heard = Heard()
    listening = await away.subscribe(channel, heard)

    await asyncio.to_thread(away.publish, channel, b"one")
    away.publish_soon(channel, b"two")
    await asyncio.sleep(0.5)

    assert heard.messages == [b"one", b"two"]  # this process's subscribers still hear them
    assert not away.heard()
    logged = " ".join(r.getMessage() for r in caplog.records)
    # One line for the outage, however many publishes and subscriptions met it.
    assert logged.count("is unavailable") == 1, logged
    away.unsubscribe(listening)


@pytest.fixture
def restarting_redis() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    yield server
    server.stop()


async def test_a_subscription_comes_back_after_redis_restarts_and_says_so(
    restarting_redis: RedisServer, channel: str
) -> None:
    over_redis = bus.RedisBus(restarting_redis.url)
    heard, restored = Heard(), threading.Event()
    listening = await over_redis.subscribe(channel, heard, restored=restored.set)
    try:
        restarting_redis.restart()
        async with asyncio.timeout(WITHIN):
            while not restored.is_set():
                await asyncio.sleep(0.05)
        client = restarting_redis.client()
        client.publish(channel, ELSEWHERE + b" back")
        client.close()
        assert await heard.wait_for(1) == [b"back"]
        assert over_redis.heard()
    finally:
        over_redis.unsubscribe(listening)


async def heard_elsewhere(publishing: bus.RedisBus, channel: str, text: str) -> bytes:
    """What a subscriber of another process receives when `publishing`'s loop publishes."""
    other_process = redis.asyncio.Redis.from_url(publishing.url)
    subscriber = other_process.pubsub()
    await subscriber.subscribe(channel)
    try:
        publishing.publish_soon(channel, text, dumps)
        async with asyncio.timeout(WITHIN):
            while (message := await subscriber.get_message(ignore_subscribe_messages=True)) is None:
                await asyncio.sleep(0.01)
        return bytes(message["data"])
    finally:
        await subscriber.aclose()
        await other_process.aclose()


async def test_what_a_loop_publishes_right_after_redis_restarts_still_goes_out(
    restarting_redis: RedisServer, channel: str
) -> None:
    """Every connection the loop had pooled died with the restart: the first publish after it
    goes out on a new one rather than being lost (a stream in another process would miss
    that event)."""
    publishing = bus.RedisBus(restarting_redis.url)
    assert (await heard_elsewhere(publishing, channel, "before")).endswith(b' "before"')

    restarting_redis.restart()

    assert (await heard_elsewhere(publishing, channel, "after")).endswith(b' "after"')
