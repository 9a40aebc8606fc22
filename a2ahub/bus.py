"""The hub's one message bus: publish on a channel, subscribe from an event loop, in this
process alone (embedded) or across processes over Redis pub/sub (`REDIS_URL`), chosen once.

Task events, replies to waiting sends, push wake-ups and stop requests all travel on it. A
subscriber in this process gets a message directly, as the object published, on its own
loop; other processes get it encoded, after this process's origin, which lets a process skip
its own messages when Redis sends them back. `publish_soon` from an event loop hands the
message to Redis without waiting: one task per loop pipelines what its writers published, in
order. While Redis is away a publish is lost (readers fill gaps from the database), and each
loop's subscription subscribes again once Redis answers, then calls its subscribers'
`restored` hooks; the outage is logged once when it begins and once when it ends
(`a2ahub.outages`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import threading
import uuid
import weakref
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import redis
from django.conf import settings
from redis.connection import parse_url

from a2ahub import outages, redis_clients

logger = logging.getLogger(__name__)

ORIGIN = uuid.uuid4().hex  # this process; its own messages come back from Redis and are skipped
_ORIGIN_BYTES = ORIGIN.encode()
# How often a subscription that lost Redis tries to subscribe again.
RESUBSCRIBE_EVERY_SECONDS = 0.2

Encode = Callable[[Any], bytes]
Decode = Callable[[bytes], Any]
Handler = Callable[[Any], object]


def as_bytes(message: Any) -> bytes:
    return message if isinstance(message, bytes) else str(message).encode()


def call_on(loop: asyncio.AbstractEventLoop, fn: Callable[..., object], *args: Any) -> None:
    """Call `fn` on `loop`: now if this is that loop, else at its next turn (a loop that has
    closed has nobody left to tell)."""
    try:
        here = asyncio.get_running_loop() is loop
    except RuntimeError:
        here = False
    if here:
        fn(*args)
    else:
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(fn, *args)


@dataclass(eq=False)
class Listening:
    """One subscriber of one channel, on the loop it subscribed from. `decode` turns another
    process's body into the message (None: drop it); `restored` runs on the loop once a lost
    Redis subscription is back (messages published meanwhile are lost)."""

    channel: str
    handler: Handler
    loop: asyncio.AbstractEventLoop
    decode: Decode = as_bytes
    restored: Callable[[], None] | None = None
    command: int = 0  # its SUBSCRIBE's number on the loop's Redis subscription (0: none)


class InProcessBus:
    """Subscribers in this process only: the embedded hub, and the local half of Redis's."""

    distributed = False

    def __init__(self) -> None:
        self.local: dict[str, set[Listening]] = defaultdict(set)
        self.lock = threading.Lock()
        self.background: asyncio.AbstractEventLoop | None = None

    def deliver_local(self, channel: str, message: Any) -> int:
        """Hand `message` to this process's subscribers of `channel`; how many there are."""
        with self.lock:
            targets = list(self.local.get(channel, ()))
        for listening in targets:
            call_on(listening.loop, listening.handler, message)
        return len(targets)

    def publish(self, channel: str, message: Any, encode: Encode = as_bytes) -> None:
        """From any thread; never raises for a transport that is away."""
        self.deliver_local(channel, message)

    # `publish` from an event loop, which must not wait on Redis (in this process, the same).
    publish_soon = publish

    async def subscribe(
        self,
        channel: str,
        handler: Handler,
        *,
        decode: Decode = as_bytes,
        restored: Callable[[], None] | None = None,
        remote: bool = True,
    ) -> Listening:
        """`handler(message)` on this loop for every message on `channel` from now on
        (`remote`: other processes' too, once the Redis SUBSCRIBE has gone out)."""
        listening = Listening(channel, handler, asyncio.get_running_loop(), decode, restored)
        with self.lock:
            self.local[channel].add(listening)
        if remote:
            await self.listen_elsewhere(listening)
        return listening

    async def listen_elsewhere(self, listening: Listening) -> None:
        """Hear other processes' messages too (there are none here)."""

    def unsubscribe(self, listening: Listening) -> None:
        with self.lock:
            subs = self.local.get(listening.channel)
            if subs is not None:
                subs.discard(listening)
                if not subs:
                    del self.local[listening.channel]

    def subscribed(self, channel: str) -> bool:
        """Whether anything in this process listens on `channel`."""
        with self.lock:
            return channel in self.local

    def heard(self) -> bool:
        """Whether other processes' messages reach this loop now (as far as it knows)."""
        return True

    def subscribe_in_background(self, channel: str, handler: Handler) -> None:
        """Subscribe for code without an event loop: `handler` runs on the bus's own thread."""
        with self.lock:
            if self.background is None:
                self.background = asyncio.new_event_loop()
                threading.Thread(
                    target=self.background.run_forever, name="a2ahub-bus", daemon=True
                ).start()
        asyncio.run_coroutine_threadsafe(self.subscribe(channel, handler), self.background)


class RedisBus(InProcessBus):
    """This process's subscribers directly, and every other process's through Redis."""

    distributed = True

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.listeners: dict[asyncio.AbstractEventLoop, Listener] = {}
        # Keyed weakly: a loop that ends (a test's, say) takes its publisher with it.
        self.publishers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Publisher] = (
            weakref.WeakKeyDictionary()
        )
        self.client = redis_clients.short_client(url)
        self.outage = outages.redis_at(url)
        self.space = channel_prefix(url)

    def publish(self, channel: str, message: Any, encode: Encode = as_bytes) -> None:
        self.deliver_local(channel, message)
        try:
            self.client.publish(self.space + channel, _ORIGIN_BYTES + b" " + encode(message))
        except redis.RedisError as exc:
            # What was published is stored, or can be done without (a wake-up: the sweep).
            self.outage.failed(exc)
        else:
            self.outage.answered()

    def publish_soon(self, channel: str, message: Any, encode: Encode = as_bytes) -> None:
        self.deliver_local(channel, message)
        loop = asyncio.get_running_loop()
        publisher = self.publishers.get(loop)
        if publisher is None:
            publisher = self.publishers[loop] = Publisher(self.url, self.outage)
        publisher.publish(self.space + channel, _ORIGIN_BYTES + b" " + encode(message))

    async def listen_elsewhere(self, listening: Listening) -> None:
        listener = self.listener_for(listening.loop)
        listening.command = listener.add(listening)
        await listener.sent(listening.command)

    def unsubscribe(self, listening: Listening) -> None:
        super().unsubscribe(listening)
        if listening.command:
            self.listener_for(listening.loop).remove(listening)

    def heard(self) -> bool:
        listener = self.listeners.get(asyncio.get_running_loop())
        return listener is None or not listener.lost

    def listener_for(self, loop: asyncio.AbstractEventLoop) -> Listener:
        # Under the lock: a web process's loops (its door's, its job loops') add theirs at once.
        with self.lock:
            listener = self.listeners.get(loop)
            if listener is None:
                for stale in [lp for lp in self.listeners if lp.is_closed()]:
                    del self.listeners[stale]
                listener = self.listeners[loop] = Listener(self.url, self.outage, self.space)
        return listener


class Listener:
    """One Redis subscription per event loop, shared by that loop's subscribers.

    Its SUBSCRIBE and UNSUBSCRIBE commands go out in order from one task, so that a subscriber
    need not wait for them: redis-py spends three loop turns on each, and under load a turn
    is every other stream's work. When the connection drops (Redis restarted, say) it
    subscribes again to every channel wanted, once Redis answers, then calls the subscribers'
    `restored` hooks."""

    def __init__(self, url: str, outage: outages.Outage, space: str = "") -> None:
        self.client = redis_clients.async_client(url, retries=0)
        self.outage = outage
        self.space = space  # before each channel's name on the server (`channel_prefix`)
        self.pubsub = self.client.pubsub(ignore_subscribe_messages=True)
        self.wanted: dict[str, set[Listening]] = {}
        self.subscribed_by: dict[str, int] = {}  # channel -> its SUBSCRIBE's number
        self.commands: list[tuple[str, str]] = []  # (verb, channel), in order
        self.sender: asyncio.Task[None] | None = None
        self.reader: asyncio.Task[None] | None = None
        self.asked = 0  # commands asked for, and gone out (or failed)
        self.done = 0
        self.waiters: list[tuple[int, asyncio.Future[None]]] = []
        # Set when a command or a read fails: what was subscribed may be gone with the
        # connection, and redis-py forgets a SUBSCRIBE that failed.
        self.lost = False
        self.catching_up = False  # resubscribed; the PONG that follows calls `restored`

    def add(self, listening: Listening) -> int:
        """The number of the command its channel's SUBSCRIBE is (or was) in."""
        subs = self.wanted.setdefault(listening.channel, set())
        subs.add(listening)
        if len(subs) == 1:
            self.subscribed_by[listening.channel] = self.command("subscribe", listening.channel)
        return self.subscribed_by[listening.channel]

    def remove(self, listening: Listening) -> None:
        subs = self.wanted.get(listening.channel, set())
        subs.discard(listening)
        if not subs:
            self.wanted.pop(listening.channel, None)
            self.subscribed_by.pop(listening.channel, None)
            self.command("unsubscribe", listening.channel)

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
                    await getattr(self.pubsub, verb)(
                        *(self.space + channel for _, channel in batch)
                    )
            except Exception as exc:  # redis-py raises more than RedisError when cut off
                # Subscribers still get this process's own messages; the reader subscribes
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
        SUBSCRIBE took effect."""
        if self.wanted:
            await self.pubsub.subscribe(*(self.space + channel for channel in self.wanted))
        await self.pubsub.ping()
        self.lost = False
        self.catching_up = True
        self.outage.answered()
        logger.info("bus subscription restored (%d channels)", len(self.wanted))

    def connection_lost(self, what: str, exc: BaseException) -> None:
        # Tried again every RESUBSCRIBE_EVERY_SECONDS: the outage is logged, not each try.
        self.outage.failed(f"{what}: {outages.describe(exc)}")
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
        while self.wanted:
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
                name = message["channel"].decode()
                self.dispatch(name.removeprefix(self.space), message["data"])
            elif message.get("type") == "pong" and self.catching_up:
                self.catching_up = False
                self.call_restored()

    def call_restored(self) -> None:
        for subs in list(self.wanted.values()):
            for listening in list(subs):
                if listening.restored is not None:
                    listening.restored()

    def dispatch(self, channel: str, data: bytes) -> None:
        """Another process's message to this loop's subscribers of its channel (a channel
        has one codec: it is decoded once)."""
        subs = self.wanted.get(channel)
        origin, _, body = data.partition(b" ")
        if not subs or origin == _ORIGIN_BYTES:
            return
        targets = list(subs)
        message = targets[0].decode(body)
        if message is None:
            return
        for listening in targets:
            listening.handler(message)


class Publisher:
    """One per event loop: its writers' messages go to Redis in order, pipelined, from one
    task, so a writer hands them over without waiting for Redis."""

    def __init__(self, url: str, outage: outages.Outage) -> None:
        self.client = redis_clients.async_client(url)
        self.outage = outage
        self.pending: list[tuple[str, bytes]] = []
        self.sender: asyncio.Task[None] | None = None

    def publish(self, channel: str, body: bytes) -> None:
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
            except (redis.RedisError, ConnectionError, OSError, TimeoutError) as exc:
                # Lost: readers fill the gap from the database.
                self.outage.failed(f"could not publish {len(batch)} messages: "
                                   f"{outages.describe(exc)}")  # fmt: skip
            else:
                self.outage.answered()


def channel_prefix(url: str) -> str:
    """What the channels' names start with on the Redis server of `url`. Pub/sub channels
    belong to the server, not to one of its databases: hubs sharing a server on different
    databases would hear each other's messages. On database N a channel is "N/" + its name;
    database 0's keep their plain names, the ones every earlier release used."""
    number = int(parse_url(url).get("db") or 0)
    return f"{number}/" if number else ""


@cache
def for_url(url: str) -> InProcessBus:
    return RedisBus(url) if url else InProcessBus()


def get() -> InProcessBus:
    """The bus of this process: over Redis when `REDIS_URL` is set, else in this process.
    (Keyed by the setting, which is fixed for a process's life; a test that points the
    setting at a Redis of its own gets that Redis's bus.)"""
    return for_url(settings.REDIS_URL)
