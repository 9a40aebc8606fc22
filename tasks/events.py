"""Task events between processes: publish after commit, subscribe from any event loop.

Subscribers in this process get events directly. With `REDIS_URL` set, events also go out as a
plain Redis PUBLISH (cheap from Celery jobs and sync code; pipelined from one task per event
loop), and each event loop that has subscribers keeps one Redis subscription that hands other
processes' events to them. A stream of a new task that this process runs listens here alone.

Replies: a blocking send waiting for a worker's turn names a reply channel (one per event loop
of the web process, subscribed once and kept) in the job; the job sends the task as it ended
there, so the waiting request needs neither a subscription of its own nor a second read.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import json
import logging
import threading
import uuid
import weakref
from collections import defaultdict
from typing import Any

import redis
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

from a2ahub import jsonbytes, redis_clients
from tasks.reading import latest_events

logger = logging.getLogger(__name__)

CHANNEL_PREFIX = "a2ahub:task:"
REPLY_PREFIX = "a2ahub:reply:"
ORIGIN = uuid.uuid4().hex  # this process; its own events come back from Redis and are skipped
_ORIGIN_BYTES = ORIGIN.encode()

Event = tuple[int, dict[str, Any]]

# How often a listener that lost Redis tries to subscribe again.
RESUBSCRIBE_EVERY_SECONDS = 0.2


class Marker:
    """Something a subscription hands its consumer that is not an event."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


# Nothing came for the subscription's `idle_after` seconds: a stream says something now, so
# proxies keep an idle line open.
IDLE = Marker("idle")
# Code on the subscriber's loop asked the consumer to look around (a turn it waits on settled).
NUDGED = Marker("nudged")


class Subscription:
    """Events of one task, in order, for one consumer on one event loop.

    Consumers wait on one queue and nothing else: each event reaches its stream one loop turn
    after it is delivered (a timer or a helper task per wait would add a turn each, and under
    load a turn is every other stream's work)."""

    def __init__(self, task_id: str, idle_after: float | None = None) -> None:
        self.task_id = task_id
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[Event | Marker] = asyncio.Queue()
        self.heard = False
        self.redis_command = 0  # the listener's number for its SUBSCRIBE (0: none)
        self.idle_timer: asyncio.TimerHandle | None = None
        if idle_after:
            self.idle_timer = self.loop.call_later(idle_after, self.check_idle, idle_after)

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
        self.heard = True
        for event in events:
            self.queue.put_nowait(event)

    def nudge(self) -> None:
        """On the subscriber's loop: wake the consumer with NUDGED."""
        self.queue.put_nowait(NUDGED)

    def check_idle(self, every: float) -> None:
        # One timer a stream, re-armed every `every` seconds whatever the traffic: a line is
        # called idle after one to two periods without an event.
        if not self.heard and self.queue.empty():
            self.queue.put_nowait(IDLE)
        self.heard = False
        self.idle_timer = self.loop.call_later(every, self.check_idle, every)

    def close(self) -> None:
        if self.idle_timer is not None:
            self.idle_timer.cancel()

    @property
    def ready(self) -> bool:
        """Whether `get` has something at once."""
        return not self.queue.empty()

    async def get(self) -> Event | Marker:
        return await self.queue.get()


_subscribers: dict[str, set[Subscription]] = defaultdict(set)
_lock = threading.Lock()


def encode(events: list[Event]) -> bytes:
    """The Redis message: this process's origin, a space, the events as JSON. The origin comes
    first so that a process skips its own events, which Redis sends back, without parsing."""
    return _ORIGIN_BYTES + b" " + jsonbytes.dumps(events)


def decode(body: bytes) -> list[Event] | None:
    """The events of a message from another process (None for one of this process's own)."""
    origin, _, events = body.partition(b" ")
    if origin == _ORIGIN_BYTES:
        return None
    try:
        return [(int(sequence), payload) for sequence, payload in json.loads(events)]
    except (ValueError, TypeError):
        # (From a process of another version, say.) Readers that miss events fill the gap
        # from the database at the next one; a message must not end the subscription.
        logger.warning("dropped a task event message of an unknown form")
        return None


def publish(task_id: str, events: list[Event]) -> None:
    """Hand events to this process's subscribers and, in distributed mode, to Redis."""
    deliver_local(task_id, events)
    if settings.REDIS_URL:
        body = encode(events)
        try:
            redis_clients.shared_client().publish(CHANNEL_PREFIX + task_id, body)
        except redis.RedisError:
            # The events are stored; a reader that missed them catches up from the database.
            logger.exception("could not publish events of task %s", task_id)


def deliver_local(task_id: str, events: list[Event]) -> None:
    with _lock:
        targets = list(_subscribers.get(task_id, ()))
    for subscription in targets:
        subscription.deliver(events)


async def subscribe(
    task_id: str, idle_after: float | None = None, over_redis: bool = True
) -> Subscription:
    """Events of the task from now on: this process's own and, `over_redis`, other processes'
    (returning once the Redis SUBSCRIBE has gone out, as a caller that reads the task next
    must). A stream of a turn this process runs, on a task nobody else knows yet, listens here
    alone: what others write to it (a cancel) stops the turn, which hands it over
    (`deliver_local`)."""
    subscription = Subscription(task_id, idle_after)
    with _lock:
        _subscribers[task_id].add(subscription)
    if settings.REDIS_URL and over_redis:
        listener = listener_for(subscription.loop)
        subscription.redis_command = listener.add(task_id)
        await listener.sent(subscription.redis_command)
    return subscription


def unsubscribe(subscription: Subscription) -> None:
    subscription.close()
    with _lock:
        subs = _subscribers.get(subscription.task_id)
        if subs is not None:
            subs.discard(subscription)
            if not subs:
                del _subscribers[subscription.task_id]
    if subscription.redis_command:
        listener_for(subscription.loop).remove(subscription.task_id)


class RedisListener:
    """One Redis subscription per event loop, shared by that loop's subscribers.

    Its SUBSCRIBE and UNSUBSCRIBE commands go out in order from one task, so that a stream
    need not wait for them: redis-py spends three loop turns on each, and under load a turn
    is every other stream's work.

    When the connection drops (Redis restarted, say) the listener subscribes again to every
    channel it wants, once Redis answers, and hands each subscriber its task's newest stored
    event: what was published meanwhile is lost, and a reader fills the gap up to that event
    from the database."""

    def __init__(self) -> None:
        self.client = redis_clients.subscriber_client(settings.REDIS_URL)
        self.pubsub = self.client.pubsub(ignore_subscribe_messages=True)
        self.counts: dict[str, int] = defaultdict(int)
        self.reader: asyncio.Task[None] | None = None
        self.replies: Replies | None = None  # kept once subscribed
        self.commands: list[tuple[str, str]] = []  # (verb, channel), in order
        self.sender: asyncio.Task[None] | None = None
        self.asked = 0  # commands asked for, and gone out (or failed)
        self.done = 0
        self.subscribed_by: dict[str, int] = {}  # task id -> its SUBSCRIBE's number
        self.replies_command = 0
        self.waiters: list[tuple[int, asyncio.Future[None]]] = []
        # Set when a command or a read fails: what was subscribed may be gone with the
        # connection, and redis-py forgets a SUBSCRIBE that failed.
        self.lost = False
        self.catching_up = False  # resubscribed; the PONG that follows starts the catch-up
        self.catch_up: asyncio.Task[None] | None = None

    @property
    def live(self) -> bool:
        """Whether what this listener subscribed is heard now (as far as it knows)."""
        return not self.lost

    def listen_for_replies(self, replies: Replies) -> int:
        if self.replies is None:
            self.replies = replies
            self.replies_command = self.command("subscribe", replies.channel)
        return self.replies_command

    def add(self, task_id: str) -> int:
        """Count a subscriber of the task; the number of the command its SUBSCRIBE is (or
        was) in."""
        self.counts[task_id] += 1
        if self.counts[task_id] == 1:
            self.subscribed_by[task_id] = self.command("subscribe", CHANNEL_PREFIX + task_id)
        return self.subscribed_by[task_id]

    def remove(self, task_id: str) -> None:
        self.counts[task_id] -= 1
        if self.counts[task_id] <= 0:
            del self.counts[task_id]
            del self.subscribed_by[task_id]
            self.command("unsubscribe", CHANNEL_PREFIX + task_id)

    def command(self, verb: str, channel: str) -> int:
        self.commands.append((verb, channel))
        self.asked += 1
        if self.sender is None or self.sender.done():
            self.sender = asyncio.create_task(self.send_commands())
        return self.asked

    async def sent(self, command: int) -> None:
        """Wait until command number `command` has gone out."""
        if self.done < command:
            waiter = asyncio.get_running_loop().create_future()
            self.waiters.append((command, waiter))
            await waiter

    async def send_commands(self) -> None:
        while self.commands:
            verb, count = self.commands[0][0], 1
            while count < len(self.commands) and self.commands[count][0] == verb:
                count += 1
            batch, self.commands = self.commands[:count], self.commands[count:]
            try:
                if verb == "resubscribe":
                    await self.resubscribe()
                else:
                    await getattr(self.pubsub, verb)(*(channel for _, channel in batch))
            except Exception as exc:  # redis-py raises more than RedisError when cut off
                # The stream still gets this process's own events; the reader subscribes
                # again once Redis answers.
                self.connection_lost(f"could not {verb} {len(batch)} channels", exc)
            self.done += len(batch)
            self.wake_waiters()
            if self.reader is None or self.reader.done():
                # It outlives the request that started it: out of that request's context, or
                # its log lines would carry the request's id (a2ahub.request_id).
                self.reader = asyncio.create_task(self.read(), context=contextvars.Context())

    async def resubscribe(self) -> None:
        """Subscribe to every channel wanted now (in order with the other commands, so none
        that was dropped meanwhile comes back), then PING: its PONG comes after every
        SUBSCRIBE took effect, and starts the catch-up."""
        channels = [CHANNEL_PREFIX + task_id for task_id in self.counts]
        if self.replies is not None:
            channels.append(self.replies.channel)
        if channels:
            await self.pubsub.subscribe(*channels)
        await self.pubsub.ping()
        self.lost = False
        self.catching_up = True
        logger.warning("task event subscription restored (%d channels)", len(channels))

    def connection_lost(self, what: str, exc: BaseException) -> None:
        if not self.lost:
            logger.warning("task event subscription lost (%s: %s); subscribing again", what, exc)
        self.lost = True

    def wake_waiters(self) -> None:
        still = []
        for wanted, waiter in self.waiters:
            if wanted <= self.done:
                if not waiter.done():
                    waiter.set_result(None)
            else:
                still.append((wanted, waiter))
        self.waiters = still

    async def read(self) -> None:
        while self.counts or self.replies is not None:
            if self.lost:
                await asyncio.sleep(RESUBSCRIBE_EVERY_SECONDS)
                await self.sent(self.command("resubscribe", ""))
                continue
            try:
                message = await self.pubsub.get_message(timeout=1.0)
            except Exception as exc:
                self.connection_lost("the subscription failed", exc)
                continue
            if message is None:
                continue
            if message.get("type") == "message":
                self.dispatch(message)
            elif message.get("type") == "pong" and self.catching_up:
                self.catching_up = False
                self.catch_up = asyncio.create_task(self.hand_over_latest(list(self.counts)))

    async def hand_over_latest(self, task_ids: list[str]) -> None:
        """Each task's newest stored event to its subscribers, who skip it if they have it
        and fill any gap before it from the database."""
        if not task_ids:
            return
        try:
            latest = await sync_to_async(read_latest_released, thread_sensitive=False)(task_ids)
        except Exception:
            # Readers still fill the gap at their task's next event.
            logger.exception("could not read the events missed while Redis was away")
            return
        for task_id, event in latest.items():
            deliver_local(task_id, [event])

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
        events = decode(message["data"])
        if events is not None:
            deliver_local(task_id, events)


def read_latest_released(task_ids: list[str]) -> dict[str, Event]:
    try:
        return latest_events(task_ids)
    finally:
        connections[DEFAULT_DB_ALIAS].close()  # a pool thread: give the connection back


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
        listener = listener_for(loop)
        await listener.sent(listener.listen_for_replies(replies))
    future = replies.waiting[task_id] = loop.create_future()
    return replies.channel, future


def replies_heard() -> bool:
    """Whether replies and other processes' events reach this event loop now (as far as its
    Redis subscription knows: it finds out at once when Redis closes the connection)."""
    if not settings.REDIS_URL:
        return True
    listener = _listeners.get(asyncio.get_running_loop())
    return listener is None or listener.live


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
        redis_clients.shared_client().publish(channel, task_id.encode() + b" " + body)
    except redis.RedisError:
        # The waiting request reads the task itself once its wait ends.
        logger.exception("could not reply to %s about task %s", channel, task_id)


class Publisher:
    """One per event loop: its writers' events go to Redis in order, pipelined, from one task,
    so a writer hands them over without waiting for Redis (this process's own subscribers have
    them already). A reader elsewhere that misses some fills the gap from the database."""

    def __init__(self) -> None:
        self.client = redis_clients.async_client(settings.REDIS_URL)
        self.pending: list[tuple[str, bytes]] = []
        self.sender: asyncio.Task[None] | None = None

    def publish(self, task_id: str, events: list[Event]) -> None:
        self.publish_message(CHANNEL_PREFIX + task_id, encode(events))

    def publish_message(self, channel: str, body: bytes) -> None:
        self.pending.append((channel, body))
        if self.sender is None or self.sender.done():
            self.sender = asyncio.create_task(self.send())

    async def send(self) -> None:
        while self.pending:
            batch, self.pending = self.pending, []
            try:
                async with (
                    asyncio.timeout(redis_clients.REDIS_WAIT_SECONDS),
                    self.client.pipeline(transaction=False) as pipe,
                ):
                    for channel, body in batch:
                        pipe.publish(channel, body)
                    await pipe.execute()
            except (redis.RedisError, ConnectionError, OSError, TimeoutError):
                logger.exception("could not publish %d batches of task events", len(batch))


# Keyed weakly: a loop that ends (a test's, say) takes its publisher with it.
_publishers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Publisher] = (
    weakref.WeakKeyDictionary()
)


def publish_soon(task_id: str, events: list[Event]) -> None:
    """`publish` from an event loop: subscribers here get the events now, Redis in a moment."""
    deliver_local(task_id, events)
    if settings.REDIS_URL:
        loop_publisher().publish(task_id, events)


def publish_message_soon(channel: str, body: bytes) -> None:
    """PUBLISH `body` on a channel of Redis from an event loop, after the events published
    before it, without waiting (for apps above this one that announce a task's writes)."""
    loop_publisher().publish_message(channel, body)


def loop_publisher() -> Publisher:
    loop = asyncio.get_running_loop()
    publisher = _publishers.get(loop)
    if publisher is None:
        publisher = _publishers[loop] = Publisher()
    return publisher
