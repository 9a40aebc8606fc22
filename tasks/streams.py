"""Streaming methods: send with a live stream, and re-attach to a task's stream.

A stream yields `(sequence, event)` pairs, the event as a stored 1.0 StreamResponse; the
sequence is None for a snapshot that is not a stored event. Live events come from the task's
subscription, which is opened before anything can be written, and any gap (an event
published out of order, or missed) is filled from the `TaskEvent` table: no gap, no
duplicate. A stream ends after the event that puts the task in a final or interrupted state.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from a2a.types import a2a_pb2 as pb
from asgiref.sync import sync_to_async
from django.db import connection

from agents.calls import Call
from agents.errors import UnsupportedOperationError
from tasks import events, runner
from tasks.methods import Turn, load_task, owned_task, prepare_turn, queue_turn
from tasks.models import TERMINAL_STATES, ExecutionMode, Task, TaskEvent
from tasks.updater import TaskUpdater, release_after_write
from tasks.wire import event_ends_stream, to_json

StreamItem = tuple[int | None, dict[str, Any]]


def released(function: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    """Run a read for a stream, then give its database connection back at once: a stream may
    stay open for hours, and each one keeping a pooled connection would cap them at the
    pool's size."""

    def run(*args: Any) -> Any:
        try:
            return function(*args)
        finally:
            connection.close()

    return sync_to_async(run)


def stored_events(task_id: str, after: int, upto: int | None = None) -> list[StreamItem]:
    rows = TaskEvent.objects.filter(task_id=task_id, sequence__gt=after)
    if upto is not None:
        rows = rows.filter(sequence__lte=upto)
    return [(row.sequence, row.payload) for row in rows.order_by("sequence")]


async def follow(
    subscription: events.Subscription, task_id: str, after: int, first: events.Event | None = None
) -> AsyncIterator[StreamItem]:
    """Live events after sequence `after` (beginning with `first` when it was taken from the
    subscription already), in order, until one ends the stream."""
    last = after
    while True:
        if first is not None:
            (sequence, payload), first = first, None
        else:
            sequence, payload = await subscription.get()
        if sequence <= last:
            continue
        if sequence > last + 1:
            for item in await released(stored_events)(task_id, last, sequence - 1):
                yield item
        last = sequence
        yield sequence, payload
        if event_ends_stream(payload):
            return


async def send_streaming_message(
    call: Call, request: pb.SendMessageRequest
) -> AsyncIterator[StreamItem]:
    release_after_write.set(True)
    turn = await prepare_turn(call, request)
    subscription = await events.subscribe(str(turn.spec.id))
    try:
        snapshot, after = (None, 0)
        if turn.stored:
            snapshot, after = await released(follow_up_snapshot)(turn)
        updater = await start_streamed_turn(call, turn)
    except BaseException:
        await events.unsubscribe(subscription)
        raise
    return stream_turn(subscription, turn, snapshot, after, updater)


def follow_up_snapshot(turn: Turn) -> tuple[pb.Task | None, int]:
    """A follow-up's stream opens with the task as it is now (a new task's stream, with its
    first stored event)."""
    task = Task.objects.get(id=turn.spec.id)
    return load_task(task, None), task.last_sequence


async def start_streamed_turn(call: Call, turn: Turn) -> TaskUpdater | None:
    if turn.spec.execution_mode == ExecutionMode.WORKER:
        await queue_turn(turn.spec, turn.stored)
        return None
    return await runner.start(
        call.agent, turn.spec, turn.context, turn.state, turn.stored, open_early=True
    )


async def stream_turn(
    subscription: events.Subscription,
    turn: Turn,
    snapshot: pb.Task | None,
    after: int,
    updater: TaskUpdater | None,
) -> AsyncIterator[StreamItem]:
    try:
        first: events.Event | None = None
        if snapshot is not None:
            yield None, {"task": to_json(snapshot)}
        elif updater is not None:
            first, reply = await first_event(subscription, updater)
            if reply is not None:
                yield None, {"message": to_json(reply)}
                return
        async for item in follow(subscription, str(turn.spec.id), after, first):
            yield item
    finally:
        await events.unsubscribe(subscription)


async def first_event(
    subscription: events.Subscription, updater: TaskUpdater
) -> tuple[events.Event | None, pb.Message | None]:
    """The turn's first event, or the single Message an inline agent may answer with instead
    of a task (then that is the whole stream)."""
    first = asyncio.ensure_future(subscription.get())
    waiters: set[asyncio.Future[Any]] = {first, updater.settled}
    done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    if first in done:
        return first.result(), None
    first.cancel()
    settled = updater.settled.result()
    return None, settled if isinstance(settled, pb.Message) else None


async def subscribe_to_task(
    call: Call, request: pb.SubscribeToTaskRequest
) -> AsyncIterator[StreamItem]:
    task = await released(owned_task)(call, request.id)
    if task.state in TERMINAL_STATES:
        raise UnsupportedOperationError(
            f"Task {request.id} is {task.state}; there is nothing to follow."
        )
    subscription = await events.subscribe(str(task.id))
    try:
        await released(task.refresh_from_db)()
        snapshot = await released(load_task)(task, None)
    except BaseException:
        await events.unsubscribe(subscription)
        raise
    return resubscribed(subscription, task.id, snapshot, task.last_sequence, call.last_event_id)


async def resubscribed(
    subscription: events.Subscription,
    task_id: Any,
    snapshot: pb.Task,
    snapshot_sequence: int,
    last_event_id: int | None,
) -> AsyncIterator[StreamItem]:
    try:
        yield None, {"task": to_json(snapshot)}
        if snapshot.status.state in (pb.TASK_STATE_COMPLETED, pb.TASK_STATE_CANCELED,
                                     pb.TASK_STATE_FAILED, pb.TASK_STATE_REJECTED):  # fmt: skip
            return
        after = snapshot_sequence
        if last_event_id is not None and last_event_id < snapshot_sequence:
            missed = await released(stored_events)(str(task_id), last_event_id, snapshot_sequence)
            for item in missed:
                yield item
                if event_ends_stream(item[1]):
                    return
        async for item in follow(subscription, str(task_id), after):
            yield item
    finally:
        await events.unsubscribe(subscription)
