"""Streaming methods: send with a live stream, and re-attach to a task's stream.

A stream yields `(sequence, event)` pairs, the event as a stored 1.0 StreamResponse; the
sequence is None for a snapshot that is not a stored event. Live events come from the task's
subscription, which is opened before anything can be written, and any gap (an event
published out of order, or missed) is filled from the `TaskEvent` table: no gap, no
duplicate. A stream ends after the event that puts the task in a final or interrupted state.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from a2a.types import a2a_pb2 as pb
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection

from a2ahub import tracing
from a2ahub.errors import InternalError, UnsupportedOperationError
from protocol.calls import Call
from protocol.handlers.owned import owned_task
from protocol.handlers.tasks import Turn, prepare_turn, queue_turn
from tasks import events, reading, runner
from tasks.models import TERMINAL_STATES, ExecutionMode
from tasks.reading import load_snapshot
from tasks.updater import TaskUpdater, release_after_write
from tasks.wire import PB_TO_STATE, event_ends_stream, to_json

StreamItem = tuple[int | None, dict[str, Any]]
# Yielded when the line has been quiet a while (SSE_HEARTBEAT_SECONDS): the stream sends a
# comment, so proxies keep it open.
KEEP_ALIVE: StreamItem = (None, {})
# Yielded when the stream is about to wait: what it yielded since can go out together (a fast
# agent's whole turn in one write to the socket, not one a frame).
PAUSE: StreamItem = (None, {})


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


async def follow(
    subscription: events.Subscription,
    task_id: str,
    after: int,
    first: events.Event | None = None,
    updater: TaskUpdater | None = None,
) -> AsyncIterator[StreamItem]:
    """Live events after sequence `after` (beginning with `first` when it was taken from the
    subscription already), in order, until one ends the stream. With the `updater` of the
    turn this process runs, the stream also ends when that turn ends without a final event
    (`turn_ended`): it never waits for what nobody will write."""
    last = after
    while True:
        if first is not None:
            received: events.Event | events.Marker = first
            first = None
        else:
            if not subscription.ready:
                yield PAUSE
            received = await subscription.get()
        if isinstance(received, events.Marker):
            async for item in on_marker(received, updater, task_id, last):
                yield item
                if event_ends_stream(item[1]):
                    return
            continue
        sequence, payload = received
        if sequence <= last:
            continue
        for item in await gap(task_id, last, sequence):
            yield item
        last = sequence
        yield sequence, payload
        if event_ends_stream(payload):
            return


async def gap(task_id: str, last: int, sequence: int) -> list[StreamItem]:
    """The events between `last` and `sequence` the stream missed, from the database."""
    if sequence == last + 1:
        return []
    return [PAUSE, *await released(reading.read_events)(task_id, last, sequence - 1)]


async def on_marker(
    marker: events.Marker, updater: TaskUpdater | None, task_id: str, last: int
) -> AsyncIterator[StreamItem]:
    """A keep-alive for an idle line. When the turn this process runs is over and its stream
    heard no final event (the turn's end nudges the subscription): the failure the
    database's outage left unwritten, or else whatever was written that the stream did not
    hear (a hand-over that failed, say), from the database; a database that is away ends
    the stream with that error."""
    if marker is events.IDLE:
        yield KEEP_ALIVE
    if marker is not events.NUDGED or updater is None:
        return
    if updater.unwritten_event is not None:
        yield None, updater.unwritten_event
    elif updater.ended.done():
        yield PAUSE
        for item in await released(reading.read_events)(task_id, last):
            yield item
            if event_ends_stream(item[1]):
                return
        raise InternalError(f"The turn of task {task_id} ended without a final state.")


async def open_subscription(task_id: str, over_redis: bool = True) -> events.Subscription:
    return await events.subscribe(
        task_id, idle_after=settings.SSE_HEARTBEAT_SECONDS, over_redis=over_redis
    )


async def send_streaming_message(
    call: Call, request: pb.SendMessageRequest
) -> AsyncIterator[StreamItem]:
    turn = await prepare_turn(call, request)
    # Set once the turn may run (never for a refused send: a caller's context that got it
    # back, a test's, would close its connections after every write from then on).
    release_after_write.set(True)
    # An inline turn of a new task runs here, and nobody else has the task's id before its
    # first event goes out: its stream listens to this process alone (events.subscribe).
    inline = turn.spec.execution_mode != ExecutionMode.WORKER
    subscription = await open_subscription(str(turn.spec.id), over_redis=turn.stored or not inline)
    try:
        snapshot, after = (None, 0)
        if turn.stored:
            # A follow-up's stream opens with the task as it is now (a new task's stream, with
            # its first stored event).
            snapshot, after = await released(load_snapshot)(turn.spec.id)
        updater = await start_streamed_turn(call, turn)
    except BaseException:
        events.unsubscribe(subscription)
        raise
    return stream_turn(subscription, turn, snapshot, after, updater)


async def start_streamed_turn(call: Call, turn: Turn) -> TaskUpdater | None:
    if turn.spec.execution_mode == ExecutionMode.WORKER:
        await queue_turn(turn.spec, turn)
        return None
    return await runner.start(
        call.agent, turn.spec, turn.context, turn.state, turn.stored, streamed=True,
        sequence=turn.sequence,
    )  # fmt: skip


async def stream_turn(
    subscription: events.Subscription,
    turn: Turn,
    snapshot: pb.Task | None,
    after: int,
    updater: TaskUpdater | None,
) -> AsyncIterator[StreamItem]:
    try:
        first: events.Event | None = None
        if updater is not None:
            # The turn settling or ending nudges the subscription: the stream waits on one
            # queue, and hears a turn that ends without an event of its own.
            updater.settled.add_done_callback(lambda _: subscription.nudge())
            updater.ended.add_done_callback(lambda _: subscription.nudge())
        if snapshot is not None:
            yield None, {"task": to_json(snapshot)}
        elif updater is not None:
            async for item in opening(subscription, updater):
                sequence, payload = item
                if item is KEEP_ALIVE or item is PAUSE:
                    yield item
                elif sequence is None:
                    yield item  # the agent answered with a Message: that is the whole stream
                    return
                else:
                    first = (sequence, payload)
        async for item in follow(subscription, str(turn.spec.id), after, first, updater):
            yield item
    finally:
        events.unsubscribe(subscription)


async def opening(
    subscription: events.Subscription, updater: TaskUpdater
) -> AsyncIterator[StreamItem]:
    """Until the turn's first event: keep-alives, then that event; or the single Message an
    inline agent may answer with instead of a task; or nothing, when the turn settled before
    any event came (its events follow, or its failure unwritten: `follow`)."""
    while True:
        if not subscription.ready:
            yield PAUSE
        received = await subscription.get()
        if received is events.IDLE:
            yield KEEP_ALIVE
        elif isinstance(received, tuple):
            yield received
            return
        elif updater.settled.done():
            settled = updater.settled.result()  # a turn that failed unwritten raises here
            if isinstance(settled, pb.Message):
                yield None, {"message": to_json(settled)}
            elif updater.unwritten_event is not None:
                yield None, updater.unwritten_event  # the database was away: the whole stream
            return


async def subscribe_to_task(
    call: Call, request: pb.SubscribeToTaskRequest
) -> AsyncIterator[StreamItem]:
    task = await released(owned_task)(call, request.id)
    tracing.link(task.traceparent)  # the call that made the task
    tracing.annotate(a2a__task__id=str(task.id), a2a__context__id=task.context_id)
    if task.state in TERMINAL_STATES:
        raise UnsupportedOperationError(
            f"Task {request.id} is {task.state}; there is nothing to follow."
        )
    subscription = await open_subscription(str(task.id))
    try:
        snapshot, sequence = await released(load_snapshot)(task.id)
    except BaseException:
        events.unsubscribe(subscription)
        raise
    return resubscribed(subscription, task.id, snapshot, sequence, call.last_event_id)


async def resubscribed(
    subscription: events.Subscription,
    task_id: Any,
    snapshot: pb.Task,
    snapshot_sequence: int,
    last_event_id: int | None,
) -> AsyncIterator[StreamItem]:
    try:
        yield None, {"task": to_json(snapshot)}
        # The missed events come first even when the task ended while the client was away
        # (between the subscribe's check and its snapshot): they include its last one.
        if last_event_id is not None and last_event_id < snapshot_sequence:
            yield PAUSE
            missed = await released(reading.read_events)(
                str(task_id), last_event_id, snapshot_sequence
            )
            for item in missed:
                yield item
                if event_ends_stream(item[1]):
                    return
        if PB_TO_STATE.get(snapshot.status.state) in TERMINAL_STATES:
            return
        async for item in follow(subscription, str(task_id), snapshot_sequence):
            yield item
    finally:
        events.unsubscribe(subscription)
