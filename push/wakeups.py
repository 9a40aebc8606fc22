"""Wake-ups of the delivery engines. Distributed, a change that made deliveries is announced
with one Redis PUBLISH after its commit, which every worker process's engine hears; the sweep
is the safety net for one that is lost. A wake-up carries nothing: an engine that hears one
claims whatever queues are due.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import cache

import redis
from django.conf import settings
from redis.backoff import NoBackoff
from redis.retry import Retry

from a2ahub import redis_clients
from tasks import events

logger = logging.getLogger(__name__)

CHANNEL = "a2ahub:push:wake"
RESUBSCRIBE_SECONDS = 1.0


def publish() -> int:
    """Wake every engine listening; how many heard it (0: no worker process is running)."""
    return int(publisher(settings.REDIS_URL).publish(CHANNEL, b"1"))


def publish_soon() -> None:
    """`publish` from an event loop, without waiting: it goes out after the task events
    published on that loop before it (a wake-up lost to a Redis away, the sweep makes up for)."""
    events.publish_message_soon(CHANNEL, b"1")


@cache
def publisher(url: str) -> redis.Redis:
    """Short timeouts: the request whose commit made deliveries must not hang on a Redis that
    is away (the wake-up is lost, the sweep makes up for it). One retry on a new connection:
    after Redis restarts, every pooled connection is dead."""
    return redis.Redis.from_url(
        url, socket_timeout=1, socket_connect_timeout=1, retry=Retry(NoBackoff(), 1)
    )


async def listen(on_wake: Callable[[], None]) -> None:
    """Call `on_wake` for every wake-up, until cancelled. While Redis is away wake-ups are
    lost, so it is called once more each time the subscription is made again."""
    while True:
        client = redis_clients.subscriber_client(settings.REDIS_URL)
        pubsub = client.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(CHANNEL)
            on_wake()
            async for _message in pubsub.listen():
                on_wake()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # redis-py raises more than RedisError when cut off
            logger.warning("push wake-ups: %s; subscribing again", exc)
        finally:
            await pubsub.aclose()
            await client.aclose()
        await asyncio.sleep(RESUBSCRIBE_SECONDS)
