"""An event loop's Redis subscription outlives a Redis that restarts empty: it subscribes again
to every task its streams follow, hands each of them its task's newest stored event (so that a
stream fills what was published meanwhile from the database), and knows while Redis is away."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import orjson
import pytest
from pytest_django.fixtures import Settings

from agents.models import Agent
from tasks import events
from tests.factories.agents import make_agent
from tests.factories.tasks import ended, open_task
from tests.integration.servers import RedisServer

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

ELSEWHERE = b"0f" * 16  # another process's origin
HEARD_WITHIN = 5.0


@pytest.fixture
def redis_here(settings: Settings) -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    settings.REDIS_URL = server.url
    yield server
    server.stop()


@pytest.fixture
def agent(transactional_db: None) -> Agent:
    return make_agent("reconnecting")


def published_elsewhere(server: RedisServer, task_id: str, event: events.Event) -> None:
    client = server.client()
    try:
        client.publish(events.CHANNEL_PREFIX + task_id, ELSEWHERE + b" " + orjson.dumps([event]))
    finally:
        client.close()


async def next_event(subscription: events.Subscription, timeout: float) -> events.Event | None:
    """The next event the subscription hands over within `timeout` seconds (markers skipped)."""
    try:
        async with asyncio.timeout(timeout):
            while True:
                received = await subscription.get()
                if isinstance(received, tuple):
                    return received
    except TimeoutError:
        return None


async def test_a_subscription_hears_other_processes_again_after_redis_restarts(
    redis_here: RedisServer,
) -> None:
    subscription = await events.subscribe("t-1")
    try:
        redis_here.restart()
        heard = None
        for sequence in range(1, int(HEARD_WITHIN / 0.1)):
            published_elsewhere(redis_here, "t-1", (sequence, {"statusUpdate": {}}))
            if heard := await next_event(subscription, 0.1):
                break
    finally:
        events.unsubscribe(subscription)

    assert heard is not None, f"nothing was heard within {HEARD_WITHIN}s of Redis coming back"


async def test_after_redis_restarts_a_subscriber_gets_its_task_s_newest_stored_event(
    redis_here: RedisServer, agent: Agent
) -> None:
    task = await asyncio.to_thread(open_task, agent, ended())  # events 1 to 3, stored
    subscription = await events.subscribe(str(task.id))
    try:
        redis_here.stop()
        assert await next_event(subscription, 0.5) is None
        assert not events.replies_heard()
        redis_here.start()
        newest = await next_event(subscription, HEARD_WITHIN)
    finally:
        events.unsubscribe(subscription)

    assert newest is not None and newest[0] == task.last_sequence == 3
    assert newest[1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert events.replies_heard()
