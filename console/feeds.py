"""What the live pages listen to: one feed per event loop and subject, shared by every page
open on it, started with its first watcher and stopped with its last.

- A task's timeline: one subscription to the task's events (`tasks.events`, the publication
  every stream uses), whatever the number of pages showing the task; each notification reads
  the new events once, from the database, and hands them to every page.
- The task list: which tasks changed, from a look at the database each tick (the newest
  finished and the moved open tasks since the last look, bounded); it reads their rows once
  and hands them to every page.
- The dashboard: its numbers, gathered once per tick for every page.

The writers of tasks never learn of any of this: they publish as they always do, and the
work per page is one `put_nowait` on the feed's side (`console.sockets`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Protocol

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.utils import timezone

from console import live_pages, rows, task_view
from tasks import events

logger = logging.getLogger(__name__)

LIST_TICK_SECONDS = 2.0
CHANGED_CAP = 1_000  # task ids remembered between ticks
ROWS_PER_TICK = 20  # more a second than a person reads; the page says how many it missed
RETRY_SECONDS = 1.0
# The feeds of the task list and of the dashboard: one a loop, each.
TASKS = ("tasks", "")
DASHBOARD = ("dashboard", "")


class Watcher(Protocol):
    def offer(self, message: str) -> None: ...


class Feed:
    """A loop's shared source of messages for the watchers of one subject."""

    def __init__(self, key: tuple[str, str]) -> None:
        self.key = key
        self.watchers: set[Watcher] = set()
        self.job: asyncio.Task[None] | None = None

    def broadcast(self, message: dict[str, Any]) -> None:
        text = encode(message)  # once, whatever the number of pages
        for watcher in list(self.watchers):
            watcher.offer(text)

    async def run(self) -> None:
        raise NotImplementedError


def encode(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"))


_feeds: dict[tuple[asyncio.AbstractEventLoop, tuple[str, str]], Feed] = {}


def join(key: tuple[str, str], make: Callable[[], Feed], watcher: Watcher) -> bool:
    """Add the watcher to the loop's feed of `key`; whether that started the feed."""
    loop = asyncio.get_running_loop()
    feed = _feeds.get((loop, key))
    started = feed is None
    if feed is None:
        feed = _feeds[(loop, key)] = make()
        feed.job = asyncio.create_task(keep_running(feed))
    feed.watchers.add(watcher)
    return started


def leave(key: tuple[str, str], watcher: Watcher) -> None:
    loop = asyncio.get_running_loop()
    feed = _feeds.get((loop, key))
    if feed is None:
        return
    feed.watchers.discard(watcher)
    if not feed.watchers:
        del _feeds[(loop, key)]
        if feed.job is not None:
            feed.job.cancel()


async def keep_running(feed: Feed) -> None:
    """A feed that fails (Redis or the database away) starts again a second later; its
    pages miss nothing they cannot read again: a timeline reads from its last event."""
    while True:
        try:
            await feed.run()
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("console feed %s failed; starting again", feed.key)
        await asyncio.sleep(RETRY_SECONDS)


def in_thread(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` on a thread of the default pool, its connection given back afterwards."""

    def released(*args: Any) -> Any:
        try:
            return function(*args)
        finally:
            connections[DEFAULT_DB_ALIAS].close()  # a pool thread: give the connection back

    return sync_to_async(released, thread_sensitive=False)


# -- a task's timeline --------------------------------------------------------------------------


class TaskTimeline(Feed):
    """Starts from the events and messages its first page has (`after`, `messages_after`):
    once subscribed it reads what came since, so nothing written before the subscription took
    effect is missed. After new events it sends the rest of the page as it now is
    (`console.task_view`): heading, state, fields, messages, artifacts."""

    def __init__(self, task_id: str, after: int, messages_after: int = 0) -> None:
        super().__init__(("task", task_id))
        self.task_id = task_id
        self.last = after
        self.last_message = messages_after

    async def run(self) -> None:
        subscription = await events.subscribe(self.task_id)
        try:
            await self.send_new(always=True)
            while True:
                await subscription.get()
                while subscription.ready:  # one read for all that came together
                    await subscription.get()
                await self.send_new()
        finally:
            events.unsubscribe(subscription)

    async def send_new(self, always: bool = False) -> None:
        """Every event after the last one sent, read from the database (so a page never
        misses one that Redis dropped), in batches; then the page's other parts."""
        sent = artifacts = False
        while True:
            batch = await in_thread(rows.events_after)(self.task_id, self.last)
            if batch:
                self.last = batch[-1]["sequence"]
                self.broadcast({"type": "events", "events": batch})
                sent, artifacts = True, artifacts or rows.touches_artifacts(batch)
            if len(batch) < rows.EVENT_BATCH:
                break
        if sent or always:
            await self.send_task(artifacts or always)

    async def send_task(self, artifacts: bool) -> None:
        # The artifacts (their parts may be large) only when an event changed them.
        view = await in_thread(task_view.task_view)(self.task_id, self.last_message, artifacts)
        if view is None:
            return
        if view["messages"]:
            self.last_message = view["messages"][-1]["position"]
        self.broadcast(view)


def watch_task(task_id: str, after: int, messages_after: int, watcher: Watcher) -> bool:
    """Whether the watcher started the task's feed (which then catches it up itself)."""
    return join(("task", task_id), lambda: TaskTimeline(task_id, after, messages_after), watcher)


def unwatch_task(task_id: str, watcher: Watcher) -> None:
    leave(("task", task_id), watcher)


# -- the task list ----------------------------------------------------------------------------


class TaskChanges(Feed):
    """Asks the database once a tick which tasks were written since the last look. Not the
    tasks' event channels: hearing every event of every task would cost each web process
    with a list open a little per event, the more the busier the hub (measured: a quarter
    more CPU per stream); a look per tick costs the same whatever the load."""

    def __init__(self) -> None:
        super().__init__(TASKS)
        self.changed: set[str] = set()

    async def run(self) -> None:
        since: datetime = timezone.now()
        while True:
            await asyncio.sleep(LIST_TICK_SECONDS)
            # Looked at again next time from a second back: a write stamped before this
            # look may commit after it.
            now = timezone.now()
            for task_id in await in_thread(rows.changed_since)(since - timedelta(seconds=1)):
                self.note(task_id)
            since = now
            await self.send_changed()

    def note(self, task_id: str) -> None:
        if len(self.changed) < CHANGED_CAP:
            self.changed.add(task_id)

    async def send_changed(self) -> None:
        if not self.changed:
            return
        ids, self.changed = list(self.changed), set()
        found, more = await in_thread(rows.task_rows)(ids, ROWS_PER_TICK)
        if found or more:
            self.broadcast({"type": "tasks", "rows": found, "more": more})


# -- the dashboard ----------------------------------------------------------------------------


class DashboardNumbers(Feed):
    def __init__(self) -> None:
        super().__init__(DASHBOARD)

    async def run(self) -> None:
        while True:
            await asyncio.sleep(settings.CONSOLE_REFRESH_SECONDS)
            html = await in_thread(live_pages.dashboard_panels)()
            self.broadcast({"type": "dashboard", "html": html})
