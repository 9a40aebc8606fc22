"""Task events between processes: publish after commit, subscribe from any event loop.

Subscribers in this process get events directly. With `REDIS_URL` set, events also go out as a
plain Redis PUBLISH (cheap from Celery jobs and sync code), and each event loop that has
subscribers keeps one Redis subscription that hands other processes' events to them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator
from functools import cache
from typing import Any

import redis
import redis.asyncio as aioredis
from django.conf import settings

logger = logging.getLogger(__name__)

CHANNEL_PREFIX = "a2ahub:task:"
ORIGIN = uuid.uuid4().hex  # this process; its own events come back from Redis and are skipped

Event = tuple[int, dict[str, Any]]


class Subscription:
    """Events of one task, in order, for one consumer on one event loop."""

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[Event] = asyncio.Queue()

    def deliver(self, events: list[Event]) -> None:
        for event in events:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, event)

    async def get(self) -> Event:
        return await self.queue.get()

    async def __aiter__(self) -> AsyncIterator[Event]:
        while True:
            yield await self.queue.get()


_subscribers: dict[str, set[Subscription]] = defaultdict(set)
_lock = threading.Lock()


def publish(task_id: str, events: list[Event]) -> None:
    """Hand events to this process's subscribers and, in distributed mode, to Redis."""
    deliver_local(task_id, events)
    if settings.REDIS_URL:
        body = json.dumps({"origin": ORIGIN, "events": events}, separators=(",", ":"))
        try:
            redis_client().publish(CHANNEL_PREFIX + task_id, body)
        except redis.RedisError:
            # The events are stored; a reader that missed them catches up from the database.
            logger.exception("could not publish events of task %s", task_id)


def deliver_local(task_id: str, events: list[Event]) -> None:
    with _lock:
        targets = list(_subscribers.get(task_id, ()))
    for subscription in targets:
        subscription.deliver(events)


@cache
def redis_client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL)


async def subscribe(task_id: str) -> Subscription:
    subscription = Subscription(task_id)
    with _lock:
        _subscribers[task_id].add(subscription)
    if settings.REDIS_URL:
        await listener_for(subscription.loop).add(task_id)
    return subscription


async def unsubscribe(subscription: Subscription) -> None:
    with _lock:
        subs = _subscribers.get(subscription.task_id)
        if subs is not None:
            subs.discard(subscription)
            if not subs:
                del _subscribers[subscription.task_id]
    if settings.REDIS_URL:
        await listener_for(subscription.loop).remove(subscription.task_id)


class RedisListener:
    """One Redis subscription per event loop, shared by that loop's subscribers."""

    def __init__(self) -> None:
        self.client = aioredis.Redis.from_url(settings.REDIS_URL)
        self.pubsub = self.client.pubsub(ignore_subscribe_messages=True)
        self.counts: dict[str, int] = defaultdict(int)
        self.reader: asyncio.Task[None] | None = None

    async def add(self, task_id: str) -> None:
        self.counts[task_id] += 1
        if self.counts[task_id] == 1:
            await self.pubsub.subscribe(CHANNEL_PREFIX + task_id)
        if self.reader is None or self.reader.done():
            self.reader = asyncio.create_task(self.read())

    async def remove(self, task_id: str) -> None:
        self.counts[task_id] -= 1
        if self.counts[task_id] <= 0:
            del self.counts[task_id]
            await self.pubsub.unsubscribe(CHANNEL_PREFIX + task_id)

    async def read(self) -> None:
        while self.counts:
            try:
                message = await self.pubsub.get_message(timeout=1.0)
            except (redis.RedisError, ConnectionError):
                logger.exception("task event subscription failed; retrying")
                await asyncio.sleep(0.5)
                continue
            if message and message.get("type") == "message":
                self.dispatch(message)

    def dispatch(self, message: dict[str, Any]) -> None:
        task_id = message["channel"].decode().removeprefix(CHANNEL_PREFIX)
        with _lock:
            wanted = task_id in _subscribers
        if not wanted:
            return
        body = json.loads(message["data"])
        if body.get("origin") != ORIGIN:
            deliver_local(task_id, [tuple(e) for e in body["events"]])  # type: ignore[misc]


_listeners: dict[asyncio.AbstractEventLoop, RedisListener] = {}


def listener_for(loop: asyncio.AbstractEventLoop) -> RedisListener:
    listener = _listeners.get(loop)
    if listener is None:
        for stale in [lp for lp in _listeners if lp.is_closed()]:
            del _listeners[stale]
        listener = _listeners[loop] = RedisListener()
    return listener
