"""The only writer of task state, one async API for every write.

Each write is planned without the database (`tasks.changes`): a conditional UPDATE on the
state the writer expects, the rows the change adds (messages, artifacts), one numbered
`TaskEvent` per change and, for a task with webhooks, the rows push adds (`tasks.hooks`).
The plan goes to the one store chosen at start-up (`tasks.stores`), which writes it at once
(one statement on PostgreSQL) and tells the listeners after the commit. Terminal tasks never
change. Sync callers call these through `async_to_sync`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from copy import copy
from typing import Any

from a2a.types import a2a_pb2 as pb
from asgiref.sync import sync_to_async
from django.db import IntegrityError
from django.utils import timezone

from a2ahub import big_bodies, tracing
from a2ahub.errors import InvalidParamsError, invalid_params
from tasks import hooks, reading, sql, stopping
from tasks.changes import (
    ArtifactChange,
    Change,
    Known,
    NewTask,
    Outcome,
    Plan,
    S,
    StatusChange,
    TransitionRefused,
    agent_text,
    apply_changes,
    carried_bytes,
    final_state,
    number_events,
    plan_open,
    snapshot_of,
    stamp,
)
from tasks.models import OPEN_STATES, TERMINAL_STATES, Artifact, Task, TaskState
from tasks.stores import announce, store
from tasks.wire import ENDING_STATES, message_to_pb, task_to_pb


async def open(
    spec: NewTask,
    changes: Sequence[Change] = (),
    runner: str = "",
    history: bool = True,
    again: bool = False,
) -> Outcome:
    """Store a new task with its first message and, in the same write, any changes the
    executor already made (a fast agent's whole life is one write) and its push config.
    Without `history` the outcome knows no messages, and the turn's end carries no snapshot
    of the task (a stream, say, has no use for one). `again`: a retry of a write whose
    answer was lost, which may have been stored (the task's id is this write's own)."""
    if tracing.enabled:
        with tracing.span("a2a.task.write", attributes={"a2a.task.id": str(spec.id),
                                                         "a2a.task.write": "open"}):  # fmt: skip
            return await stored(spec, changes, runner, history, again)
    return await stored(spec, changes, runner, history, again)


async def stored(
    spec: NewTask, changes: Sequence[Change], runner: str, history: bool, again: bool
) -> Outcome:
    # A big message or artifact is turned into rows, and back, on a thread (a2ahub/big_bodies).
    size = big_bodies.size_of(spec.message) + carried_bytes(changes)
    task, plan, end = await big_bodies.off_loop(size, plan_open, spec, changes, runner)
    extra = hooks.rows_for(task, spec.push_config) if spec.push_config is not None else []
    try:
        with client_id_guard(spec):
            await store().insert(plan, extra, big_bodies.is_big(size))
    except (IntegrityError, InvalidParamsError):
        if not again:
            raise
        _, sequence, _ = await sync_to_async(reading.sequence_state_of)(spec.id)
        if sequence != plan.sequence:
            raise
        # The lost answer's write was stored: its events were never told.
        announce(plan, task.push_enabled, on_loop=True)
    return await big_bodies.off_loop(size, opened, task, plan, end, history)


@contextmanager
def client_id_guard(spec: NewTask) -> Iterator[None]:
    """Two first sends naming the same new task (a pre-0.2 client's own id) at once: the
    unique constraint lets one task be made, and the other request is told why it was not."""
    try:
        yield
    except IntegrityError:
        if not spec.client_id:
            raise
        raise invalid_params(
            "id", "another request is creating a task with this id; send again once it answers"
        ) from None


def opened(task: Task, plan: Plan, end: TaskState, history: bool) -> Outcome:
    snapshot = None
    if end in ENDING_STATES and history:
        snapshot = task_to_pb(task, plan.messages, plan.artifacts)
    known = Known(
        task.context_id, len(plan.messages), {a.artifact_id: a for a in plan.artifacts},
        push_enabled=task.push_enabled, metadata=task.metadata,
        history=[message_to_pb(m) for m in plan.messages] if history else None,
    )  # fmt: skip
    return Outcome(end, plan.sequence, snapshot, known)


async def record(
    task_id: uuid.UUID | str,
    expected: TaskState,
    changes: Sequence[Change],
    known: Known | None = None,
    also: dict[str, Any] | None = None,
    after: int | None = None,
) -> Outcome:
    """Apply an executor's changes to a stored task that is still in the `expected` state.
    `known` (read when not given) is brought up to date; `also` sets more of the task's
    fields in the same write. `after`: a retry of a write whose answer was lost, made only
    if the task's last event is still this one (and taken as done if the lost write's
    events follow it)."""
    if tracing.enabled:
        with tracing.span("a2a.task.write", attributes={"a2a.task.id": str(task_id),
                                                         "a2a.task.write": "record"}):  # fmt: skip
            return await recorded(task_id, expected, changes, known, also, after)
    return await recorded(task_id, expected, changes, known, also, after)


async def recorded(
    task_id: uuid.UUID | str,
    expected: TaskState,
    changes: Sequence[Change],
    known: Known | None,
    also: dict[str, Any] | None,
    after: int | None,
) -> Outcome:
    end = final_state(expected, changes)
    if known is None:
        known = await sync_to_async(reading.read_known)(task_id)
    if known.artifacts is None and any(isinstance(c, ArtifactChange) for c in changes):
        known.artifacts = await sync_to_async(reading.read_artifacts)(task_id)
    artifacts: dict[str, Artifact] = {}

    def build(plan: Plan) -> None:
        # Rows of the known artifacts are changed in copies: known changes only once written.
        artifacts.clear()
        artifacts.update({key: copy(row) for key, row in (known.artifacts or {}).items()})
        apply_changes(plan, changes, artifacts, known.position)

    size = carried_bytes(changes)
    plan = await apply(task_id, known, (expected,), end, build, also=also, after=after, size=size)
    if known.artifacts is not None:
        known.artifacts = artifacts
    known.position += len(plan.messages)
    return await big_bodies.off_loop(size, recorded_outcome, end, plan, known)


def recorded_outcome(end: TaskState, plan: Plan, known: Known) -> Outcome:
    if known.history is not None:
        known.history.extend(message_to_pb(m) for m in plan.messages)
    snapshot = snapshot_of(plan.task, known) if end in ENDING_STATES else None
    return Outcome(end, plan.sequence, snapshot, known)


async def apply(
    task_id: uuid.UUID | str,
    known: Known,
    states: Sequence[str],
    end: TaskState,
    build: Callable[[Plan], None],
    owner: str | None = None,
    config: pb.TaskPushNotificationConfig | None = None,
    protocol_version: str = "",
    also: dict[str, Any] | None = None,
    after: int | None = None,
    size: int = 0,
) -> Plan:
    """Plan a change with `build` and write it if the task is in one of `states` (and has
    that `owner`; and, `after`, that last event). A task not known to have webhooks is
    written without push's rows, on the condition that it still has none; one that got a
    webhook meanwhile is planned again."""
    while True:
        shell = Task(
            id=task_id, context_id=known.context_id, state=states[0],
            protocol_version=protocol_version,
        )  # fmt: skip
        plan = Plan(shell, 0, timezone.now())
        await big_bodies.off_loop(size, build, plan)
        followed = known.push_enabled is not False or config is not None
        values = {"state": end, "updated_at": plan.now, "heartbeat_at": plan.now}
        if any(event.kind == "status" for event in plan.events):
            values |= {
                "status_message": plan.task.status_message,
                "status_timestamp": plan.task.status_timestamp,
            }
        values |= also or {}
        if config is not None:
            values["push_enabled"] = True
        change = sql.Change(
            task_id, tuple(states), values, plan.messages, plan.artifacts,
            plan.updated_artifacts, plan.events, owner=owner, without_push=not followed,
            extra=hooks.rows_for(shell, config) if followed else (), sequence=after,
        )  # fmt: skip
        changed = await store().change(change, plan, big_bodies.is_big(size))
        if changed is not None:
            known.push_enabled = changed[1]
            shell.push_enabled = changed[1]
            return plan
        if after is not None and await written_before(task_id, after, end, plan):
            return plan
        state, _, pushed = await sync_to_async(reading.sequence_state_of)(task_id)
        if not (state in states and pushed and not followed):
            raise TransitionRefused(state, end)
        known.push_enabled = True


async def written_before(task_id: uuid.UUID | str, after: int, end: TaskState, plan: Plan) -> bool:
    """Whether a retried change refused for its `after` was written by the attempt whose
    answer was lost (the task is in its end state with exactly its events after `after`);
    if so its events are told now, as they were not then."""
    state, sequence, pushed = await sync_to_async(reading.sequence_state_of)(task_id)
    if state != end or sequence != after + len(plan.events):
        return False
    number_events(plan, sequence)
    announce(plan, pushed, on_loop=True)
    return True


async def add_user_message(
    task: Task | uuid.UUID | str,
    owner: str,
    message: pb.Message,
    push_config: pb.TaskPushNotificationConfig | None = None,
    position: int | None = None,
    runner: str = "",
    version: str = "",
) -> Outcome:
    """A follow-up message resumes an interrupted task: it goes back to working. A push
    config sent with it is stored only if the task takes the message (and then hears its
    events). `position`: how many messages the task has (read when not given); `runner`:
    the job that is to run the turn (a worker's token), named in the same write; `version`:
    the request's protocol version, which `push_config`'s deliveries speak (the task's when
    not given)."""
    if not isinstance(task, Task):
        task = await sync_to_async(reading.read_task)(task)
    if position is None:
        position = (await sync_to_async(reading.read_known)(task.id)).position
    known = Known(task.context_id, position, push_enabled=task.push_enabled)

    def build(plan: Plan) -> None:
        plan.add_message(stamp(message, plan.task, pb.ROLE_USER), position)
        plan.status(StatusChange(S.WORKING), 0)

    interrupted = (S.INPUT_REQUIRED, S.AUTH_REQUIRED)
    plan = await apply(
        task.id, known, interrupted, S.WORKING, build, owner=owner, config=push_config,
        protocol_version=version or task.protocol_version,
        also={"runner": runner} if runner else None,
        size=big_bodies.size_of(message),
    )  # fmt: skip
    return Outcome(S.WORKING, plan.sequence)


async def cancel(task_id: uuid.UUID | str, owner: str, reason: str = "") -> Outcome:
    """Cancel an open task and stop its turn, wherever it runs."""
    known = await sync_to_async(reading.read_known)(task_id)
    message = agent_text(reason) if reason else None

    def build(plan: Plan) -> None:
        plan.status(StatusChange(S.CANCELED, message), known.position)

    plan = await apply(task_id, known, tuple(sorted(OPEN_STATES)), S.CANCELED, build, owner=owner)
    await stopping.stop_everywhere(str(task_id))
    return Outcome(S.CANCELED, plan.sequence)


async def fail_stale(task_id: uuid.UUID | str, reason: str) -> bool:
    """Fail an open task whose runner went silent; False when it finished meanwhile."""
    state, _, _ = await sync_to_async(reading.sequence_state_of)(task_id)
    if state is None or state in TERMINAL_STATES:
        return False
    failure = [StatusChange(S.FAILED, agent_text(reason))]
    try:
        await record(task_id, TaskState(state), failure, also={"last_error": reason})
    except TransitionRefused:
        return False
    # A turn still running (its process lost the database a while, say) stops, and hands
    # this failure to its stream.
    await stopping.stop_everywhere(str(task_id))
    return True
