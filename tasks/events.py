"""Task events: what a task's subscribers hear, on the bus (`a2ahub.bus`), one channel a task.

Subscribers in this process get the events as published; other processes get them as JSON.
A stream of a new task that this process runs listens here alone. After a lost Redis
subscription comes back, each subscriber is handed its task's newest stored event, and fills
the gap before it from the database.

Replies: a blocking send waiting for a worker's turn names a reply channel (one per event loop
of the web process, subscribed once and kept) in the job; the job sends the task as it ended
there, so the waiting request needs neither a subscription of its own nor a second read.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import weakref
from functools import partial
from typing import Any

from asgiref.sync import sync_to_async

from a2ahub import bus, jsonbytes
from tasks.reading import latest_events, released

logger = logging.getLogger(__name__)

CHANNEL_PREFIX = "a2ahub:task:"
REPLY_PREFIX = "a2ahub:reply:"

Event = tuple[int, dict[str, Any]]


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
        self.listening: bus.Listening | None = None
        self.idle_timer: asyncio.TimerHandle | None = None
        if idle_after:
            self.idle_timer = self.loop.call_later(idle_after, self.check_idle, idle_after)

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


def encode(events: list[Event]) -> bytes:
    return jsonbytes.dumps(events)


def decode(body: bytes) -> list[Event] | None:
    """The events of a message from another process (None for one of an unknown form)."""
    try:
        return [(int(sequence), payload) for sequence, payload in json.loads(body)]
    except (ValueError, TypeError):
        # (From a process of another version, say.) Readers that miss events fill the gap
        # from the database at the next one; a message must not end the subscription.
        logger.warning("dropped a task event message of an unknown form")
        return None


def publish(task_id: str, events: list[Event]) -> None:
    """Hand events to the task's subscribers, here and in other processes (any thread)."""
    bus.get().publish(CHANNEL_PREFIX + task_id, events, encode)


def publish_soon(task_id: str, events: list[Event]) -> None:
    """`publish` from an event loop: subscribers here get the events now, others in a moment."""
    bus.get().publish_soon(CHANNEL_PREFIX + task_id, events, encode)


def deliver_local(task_id: str, events: list[Event]) -> None:
    bus.get().deliver_local(CHANNEL_PREFIX + task_id, events)


def listened(task_id: str) -> bool:
    """Whether a subscriber in this process follows the task."""
    return bus.get().subscribed(CHANNEL_PREFIX + task_id)


async def subscribe(
    task_id: str, idle_after: float | None = None, over_redis: bool = True
) -> Subscription:
    """Events of the task from now on: this process's own and, `over_redis`, other processes'
    (returning once the subscription is made, as a caller that reads the task next must). A
    stream of a turn this process runs, on a task nobody else knows yet, listens here alone:
    what others write to it (a cancel) stops the turn, which hands it over (`deliver_local`)."""
    subscription = Subscription(task_id, idle_after)
    subscription.listening = await bus.get().subscribe(
        CHANNEL_PREFIX + task_id, subscription.put_all, decode=decode,
        restored=partial(catch_up_soon, task_id), remote=over_redis,
    )  # fmt: skip
    return subscription


def unsubscribe(subscription: Subscription) -> None:
    subscription.close()
    if subscription.listening is not None:
        bus.get().unsubscribe(subscription.listening)


# -- after a lost Redis subscription comes back ---------------------------------------------

_catching_up: dict[asyncio.AbstractEventLoop, set[str]] = {}


def catch_up_soon(task_id: str) -> None:
    """On the loop whose subscription came back: one read for all its tasks."""
    loop = asyncio.get_running_loop()
    pending = _catching_up.setdefault(loop, set())
    if not pending:
        loop.call_soon(lambda: loop.create_task(hand_over_latest(_catching_up.pop(loop))))
    pending.add(task_id)


async def hand_over_latest(task_ids: set[str]) -> None:
    """Each task's newest stored event to its subscribers, who skip it if they have it and
    fill any gap before it from the database."""
    try:
        # On a pool thread, its connection given back at once.
        latest = await sync_to_async(released, thread_sensitive=False)(
            latest_events, list(task_ids)
        )
    except Exception:
        # Readers still fill the gap at their task's next event.
        logger.exception("could not read the events missed while Redis was away")
        return
    for task_id, event in latest.items():
        deliver_local(task_id, [event])


# -- replies from worker jobs to the blocking sends waiting for them ----------------------------

_reply_numbers = itertools.count(1)


class Replies:
    """The replies for one event loop's waiting sends, by task id, on one channel."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.channel = f"{REPLY_PREFIX}{bus.ORIGIN}:{next(_reply_numbers)}"
        self.waiting: dict[str, asyncio.Future[bytes]] = {}
        self.subscribed = loop.create_task(
            bus.get().subscribe(self.channel, self.resolve, decode=decode_reply)
        )

    def resolve(self, reply: tuple[str, bytes]) -> None:
        """On the loop: hand the reply to the send waiting for it (if it still waits)."""
        future = self.waiting.get(reply[0])
        if future is not None and not future.done():
            future.set_result(reply[1])


def encode_reply(reply: tuple[str, bytes]) -> bytes:
    return reply[0].encode() + b" " + reply[1]


def decode_reply(body: bytes) -> tuple[str, bytes]:
    task_id, _, snapshot = body.partition(b" ")
    return task_id.decode(), snapshot


_replies: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Replies] = (
    weakref.WeakKeyDictionary()
)


async def expect_reply(task_id: str) -> tuple[str, asyncio.Future[bytes]]:
    """Wait for the reply of a job about to be queued: the channel to name in the job, and
    the future its reply (the serialized task, or b"" when it has none) resolves."""
    loop = asyncio.get_running_loop()
    replies = _replies.get(loop)
    if replies is None:
        replies = _replies[loop] = Replies(loop)
    await asyncio.shield(replies.subscribed)
    future = replies.waiting[task_id] = loop.create_future()
    return replies.channel, future


def replies_heard() -> bool:
    """Whether replies and other processes' events reach this event loop now (as far as its
    Redis subscription knows: it finds out at once when Redis closes the connection)."""
    return bus.get().heard()


def forget_reply(channel: str, task_id: str) -> None:
    """On the waiting loop, once the send stops waiting."""
    replies = _replies.get(asyncio.get_running_loop())
    if replies is not None and replies.channel == channel:
        replies.waiting.pop(task_id, None)


def send_reply(channel: str, task_id: str, body: bytes) -> None:
    """From a job (any thread): the turn ended; `body` is the task as it ended, or b"".
    A reply channel is one process's: a waiter here is told without Redis."""
    if channel and not bus.get().deliver_local(channel, (task_id, body)):
        bus.get().publish(channel, (task_id, body), encode_reply)
