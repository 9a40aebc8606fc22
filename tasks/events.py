"""Task events between processes: publish after commit, subscribe from any event loop.

Subscribers in this process get events directly. With `REDIS_URL` set, events also go out as a
plain Redis PUBLISH (cheap from Celery jobs and sync code), and each event loop that has
subscribers keeps one Redis subscription that hands other processes' events to them.

Replies: a blocking send waiting for a worker's turn names a reply channel (one per event loop
of the web process, subscribed once and kept) in the job; the job sends the task as it ended
there, so the waiting request needs neither a subscription of its own nor a second read.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import threading
import uuid
import weakref
from collections import defaultdict
from collections.abc import AsyncIterator
from functools import cache
from typing import Any

import redis
import redis.asyncio as aioredis
from django.conf import settings

logger = logging.getLogger(__name__)

CHANNEL_PREFIX = "a2ahub:task:"
REPLY_PREFIX = "a2ahub:reply:"
ORIGIN = uuid.uuid4().hex  # this process; its own events come back from Redis and are skipped

Event = tuple[int, dict[str, Any]]


class Subscription:
    """Events of one task, in order, for one consumer on one event loop."""

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[Event] = asyncio.Queue()

    def deliver(self, events: list[Event]) -> None:
        try:
            here = asyncio.get_running_loop() is self.loop
        except RuntimeError:
            here = False
        if here:
            self.put_all(events)
        else:
            # One wake-up of the subscriber's loop for the whole batch.
            self.loop.call_soon_threadsafe(self.put_all, events)

    def put_all(self, events: list[Event]) -> None:
        for event in events:
            self.queue.put_nowait(event)

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
        self.replies: Replies | None = None  # kept once subscribed

    async def listen_for_replies(self, replies: Replies) -> None:
        if self.replies is None:
            self.replies = replies
            await self.pubsub.subscribe(replies.channel)
        if self.reader is None or self.reader.done():
            self.reader = asyncio.create_task(self.read())

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
        while self.counts or self.replies is not None:
            try:
                message = await self.pubsub.get_message(timeout=1.0)
            except (redis.RedisError, ConnectionError):
                logger.exception("task event subscription failed; retrying")
                await asyncio.sleep(0.5)
                continue
            if message and message.get("type") == "message":
                self.dispatch(message)

    def dispatch(self, message: dict[str, Any]) -> None:
        if self.replies is not None and message["channel"] == self.replies.channel.encode():
            task_id, _, body = message["data"].partition(b" ")
            self.replies.resolve(task_id.decode(), body)
            return
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


# -- replies from worker jobs to the blocking sends waiting for them ----------------------------

_reply_numbers = itertools.count(1)


class Replies:
    """The replies for one event loop's waiting sends, by task id, on one channel."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.channel = f"{REPLY_PREFIX}{ORIGIN}:{next(_reply_numbers)}"
        self.waiting: dict[str, asyncio.Future[bytes]] = {}

    def resolve(self, task_id: str, body: bytes) -> None:
        """On the loop: hand the reply to the send waiting for it (if it still waits)."""
        future = self.waiting.get(task_id)
        if future is not None and not future.done():
            future.set_result(body)


_replies: dict[asyncio.AbstractEventLoop, Replies] = {}
_replies_by_channel: dict[str, Replies] = {}


def replies_for(loop: asyncio.AbstractEventLoop) -> Replies:
    with _lock:
        replies = _replies.get(loop)
        if replies is None:
            for stale in [lp for lp in _replies if lp.is_closed()]:
                del _replies_by_channel[_replies.pop(stale).channel]
            replies = _replies[loop] = Replies(loop)
            _replies_by_channel[replies.channel] = replies
    return replies


async def expect_reply(task_id: str) -> tuple[str, asyncio.Future[bytes]]:
    """Wait for the reply of a job about to be queued: the channel to name in the job, and
    the future its reply (the serialized task, or b"" when it has none) resolves."""
    loop = asyncio.get_running_loop()
    replies = replies_for(loop)
    if settings.REDIS_URL:
        await listener_for(loop).listen_for_replies(replies)
    future = replies.waiting[task_id] = loop.create_future()
    return replies.channel, future


def forget_reply(channel: str, task_id: str) -> None:
    """On the waiting loop, once the send stops waiting."""
    with _lock:
        replies = _replies_by_channel.get(channel)
    if replies is not None:
        replies.waiting.pop(task_id, None)


def send_reply(channel: str, task_id: str, body: bytes) -> None:
    """From a job (any thread): the turn ended; `body` is the task as it ended, or b""."""
    if not channel:
        return
    with _lock:
        replies = _replies_by_channel.get(channel)
    if replies is not None:
        with contextlib.suppress(RuntimeError):  # its loop has closed: nobody waits
            replies.loop.call_soon_threadsafe(replies.resolve, task_id, body)
        return
    if not settings.REDIS_URL:
        return
    try:
        redis_client().publish(channel, task_id.encode() + b" " + body)
    except redis.RedisError:
        # The waiting request reads the task itself once its wait ends.
        logger.exception("could not reply to %s about task %s", channel, task_id)


# Keyed weakly: a loop that ends (a test's, say) takes its client with it.
_async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aioredis.Redis] = (
    weakref.WeakKeyDictionary()
)


async def publish_async(task_id: str, events: list[Event]) -> None:
    """`publish` from an event loop: the Redis PUBLISH is awaited, not blocking the loop."""
    deliver_local(task_id, events)
    if not settings.REDIS_URL:
        return
    loop = asyncio.get_running_loop()
    client = _async_clients.get(loop)
    if client is None:
        client = _async_clients[loop] = aioredis.Redis.from_url(settings.REDIS_URL)
    body = json.dumps({"origin": ORIGIN, "events": events}, separators=(",", ":"))
    try:
        await client.publish(CHANNEL_PREFIX + task_id, body)
    except (redis.RedisError, ConnectionError):
        logger.exception("could not publish events of task %s", task_id)
