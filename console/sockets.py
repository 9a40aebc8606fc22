"""The base of the console's WebSocket consumers: staff only, and a bounded outbox.

A page's socket is fed by a shared feed (`console.feeds`), which hands each watcher a message
with one `put_nowait`. The socket's own writer sends them on; the browser acknowledges each
one it applied, and no more than `WINDOW` may be unacknowledged. A browser that stops
reading (a slow line, a hung tab) therefore stops the writer, its outbox fills, and the next
message drops it: it is told to reload, and sent nothing more. Memory per socket stays within
the outbox and the window, whatever the server buffers, and nobody upstream ever waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

logger = logging.getLogger(__name__)

WINDOW = 8  # messages sent and not yet acknowledged by the page
FELL_BEHIND = 4000  # close code: the page fell behind and should reload
# A dropped page closes its socket once it has read why; one that never does is closed then.
CLOSE_DROPPED_AFTER_SECONDS = 60.0


class StaffSocket(AsyncJsonWebsocketConsumer):
    """A live page's socket for signed-in, active staff (other callers are refused at the
    handshake: HTTP 403). Subclasses join their feeds in `start` and leave them in `stop`."""

    # Nothing reaches these sockets through Channels' layer: their feeds are in-process.
    channel_layer_alias = "console: no channel layer"
    permission = ""  # a permission the user must also have, e.g. "tasks.view_task"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Messages as JSON objects' text, encoded once for every page (`console.feeds`).
        self.outbox: asyncio.Queue[str] = asyncio.Queue(settings.CONSOLE_SOCKET_QUEUE)
        self.sent = 0
        self.acknowledged = 0
        self.window_open = asyncio.Event()
        self.window_open.set()
        self.writer: asyncio.Task[None] | None = None
        self.dropped = False
        self.started = False
        self.closing: asyncio.Task[None] | None = None

    async def connect(self) -> None:
        if not await self.allowed():
            await self.close()  # before accepting: the handshake is refused
            return
        await self.accept()
        self.writer = asyncio.create_task(self.write())
        self.started = True
        await self.start()

    async def allowed(self) -> bool:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not user.is_active or not user.is_staff:
            return False
        if self.permission:
            return bool(await database_sync_to_async(user.has_perm)(self.permission))
        return True

    async def start(self) -> None:
        """Join the feeds this page listens to."""

    def stop(self) -> None:
        """Leave them (on this loop, at once: no await, so a drop cannot be interleaved)."""

    def offer(self, message: str) -> None:
        """Queue a message (a JSON object's text) for the page; a full outbox drops the page.
        Called by feeds on this socket's loop, and never waits."""
        if self.dropped:
            return
        try:
            self.outbox.put_nowait(message)
        except asyncio.QueueFull:
            self.drop("This page fell behind the live updates. Reload it to catch up.")

    def drop(self, reason: str) -> None:
        self.dropped = True
        self.stop()
        if self.writer is not None:
            self.writer.cancel()
        # The outbox's messages go with it; only the reason is sent, past the window.
        self.outbox = asyncio.Queue(1)
        logger.warning("dropped a console socket that fell behind (%s)", self.scope.get("path"))
        self.closing = asyncio.create_task(self.tell_to_reload(reason))

    async def tell_to_reload(self, reason: str) -> None:
        # Not closed from here at once: a page that stopped reading has messages unread on the
        # connection, and a close it does not answer in time ends abortively, which loses them
        # and this one (the page would then reconnect, never told). It closes when it reads this.
        with contextlib.suppress(Exception):  # the page may be gone already
            await self.send_json({"type": "reload", "reason": reason})
            await asyncio.sleep(CLOSE_DROPPED_AFTER_SECONDS)
            await self.close(code=FELL_BEHIND)

    async def write(self) -> None:
        while True:
            message = await self.outbox.get()
            while self.sent - self.acknowledged >= WINDOW:
                self.window_open.clear()
                await self.window_open.wait()
            self.sent += 1
            # The message's number first, then its own fields: `{"n": 7, "type": ...}`.
            await self.send(text_data=f'{{"n": {self.sent}, {message[1:]}')

    @classmethod
    async def decode_json(cls, text_data: str) -> Any:
        try:
            return json.loads(text_data)
        except ValueError:
            return None  # a page's garbage does not end its socket

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        # The page acknowledges each message it applied by its number.
        if isinstance(content, dict) and isinstance(content.get("ack"), int):
            self.acknowledged = max(self.acknowledged, min(content["ack"], self.sent))
            self.window_open.set()

    async def disconnect(self, code: int) -> None:
        if self.started and not self.dropped:
            self.stop()
        if self.writer is not None:
            self.writer.cancel()
        if self.closing is not None:
            self.closing.cancel()
