"""Stored tasks read back as the protocol's Task, with as much history as asked for: one task,
or a page of them in a fixed number of queries however long the page; and a task's stored
events, which streams and subscribers replay."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from a2a.types import a2a_pb2 as pb
from django.db import connection, transaction
from django.db.models import F, Window
from django.db.models.functions import RowNumber

from a2ahub import asyncdb
from a2ahub.errors import TaskNotFoundError
from tasks.changes import Known, TransitionRefused
from tasks.models import Artifact, Message, Task, TaskEvent
from tasks.wire import task_to_pb

T = TypeVar("T")


def load_task(task: Task, history_length: int | None, artifacts: bool = True) -> pb.Task:
    return load_tasks([task], history_length, artifacts)[0]


def load_tasks(
    tasks: Sequence[Task], history_length: int | None, artifacts: bool = True
) -> list[pb.Task]:
    """The tasks in their order, each with its newest `history_length` messages (all of them
    when None) and its artifacts when asked: one query for the messages of all the tasks, one
    for their artifacts."""
    ids = [task.id for task in tasks]
    histories = histories_of(ids, history_length)
    found: dict[uuid.UUID, list[Artifact]] = defaultdict(list)
    if artifacts and ids:
        for artifact in Artifact.objects.filter(task_id__in=ids):
            found[artifact.task_id].append(artifact)
    return [task_to_pb(task, histories[task.id], found[task.id]) for task in tasks]


# `load_task` of a caller's task in one statement: its row, its newest messages (all of them
# when the limit is NULL) and its artifacts.
OWNED_TASK_SQL = """
SELECT t.context_id, t.state, t.status_timestamp, t.status_message, t.metadata,
  (SELECT coalesce(jsonb_agg(m ORDER BY m.position), '[]') FROM (SELECT message_id, context_id,
     task_id, role, parts, reference_task_ids, extensions, metadata, position FROM tasks_message
     WHERE task_id = t.id ORDER BY position DESC LIMIT %s) m),
  (SELECT coalesce(jsonb_agg(a ORDER BY a.position), '[]') FROM (SELECT artifact_id, name,
     description, parts, extensions, metadata, position FROM tasks_artifact WHERE task_id = t.id) a)
FROM tasks_task t WHERE t.id = %s AND t.agent_id = %s AND t.owner = %s
"""


async def read_owned_task(
    task_id: uuid.UUID, agent_id: int, owner: str, history_length: int | None
) -> pb.Task:
    """The owner's task on the agent, as `load_task` reads it (none: TaskNotFoundError, what
    a client is told of another's task). On the event loop's own connections
    (`asyncdb.available()`): one round trip and no thread, where the ORM takes four (its
    pool's check, the task, its messages, its artifacts) on a thread."""
    params = [history_length, task_id, agent_id, owner]
    rows = await asyncdb.execute(OWNED_TASK_SQL, params, fetch=True)
    if not rows:
        raise TaskNotFoundError(f"Task {str(task_id)!r} was not found.")
    context_id, state, timestamp, status_message, metadata, history, artifacts = rows[0]
    task = Task(id=task_id, context_id=context_id, state=state, status_timestamp=timestamp,
                status_message=status_message, metadata=metadata)  # fmt: skip
    return task_to_pb(task, [Message(**m) for m in history], [Artifact(**a) for a in artifacts])


def histories_of(
    ids: list[uuid.UUID], history_length: int | None
) -> defaultdict[uuid.UUID, list[Message]]:
    histories: defaultdict[uuid.UUID, list[Message]] = defaultdict(list)
    if not ids or history_length == 0:
        return histories
    messages = Message.objects.filter(task_id__in=ids)
    if history_length is not None:
        # Each task's newest messages: numbered from the newest within each task.
        newest = Window(RowNumber(), partition_by=F("task_id"), order_by=F("position").desc())
        messages = messages.annotate(newest=newest).filter(newest__lte=history_length)
    for message in messages.order_by("task_id", "position"):
        histories[message.task_id].append(message)  # type: ignore[index]
    return histories


def load_snapshot(task_id: uuid.UUID | str) -> tuple[pb.Task, int]:
    """The task as it is now and the sequence of the last event it holds, read as of one
    moment: a stream sends this Task, then the events after that sequence. Read apart, an
    event written in between would reach the client twice (in the Task and after it)."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            # Each statement would otherwise see the commits made since the one before.
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        task = Task.objects.get(id=task_id)
        return load_task(task, None), task.last_sequence


def read_events(task_id: str, after: int, upto: int | None = None) -> list[tuple[int, Any]]:
    """The task's stored events after sequence `after` (up to `upto`), in order."""
    rows = TaskEvent.objects.filter(task_id=task_id, sequence__gt=after)
    if upto is not None:
        rows = rows.filter(sequence__lte=upto)
    return [(row.sequence, row.payload) for row in rows.order_by("sequence")]


def latest_events(task_ids: Sequence[str]) -> dict[str, tuple[int, Any]]:
    """The newest stored event of each task, by task id (a reader that missed events fills
    the gap up to it)."""
    rows = TaskEvent.objects.filter(task_id__in=task_ids, sequence=F("task__last_sequence"))
    return {str(row.task_id): (row.sequence, row.payload) for row in rows}


def read_artifacts(task_id: uuid.UUID | str) -> dict[str, Artifact]:
    return {a.artifact_id: a for a in Artifact.objects.filter(task_id=task_id)}


def read_known(task_id: uuid.UUID | str) -> Known:
    """What a write must know of a stored task: its context and how many messages it has."""
    found = Task.objects.filter(id=task_id).values_list("context_id", "push_enabled").first()
    if found is None:
        raise TransitionRefused(None, "a change")
    count = Message.objects.filter(task_id=task_id).count()
    return Known(found[0], count, push_enabled=found[1])


def read_task(task_id: uuid.UUID | str) -> Task:
    found = Task.objects.filter(id=task_id).first()
    if found is None:
        raise TransitionRefused(None, "a change")
    return found


def sequence_state_of(task_id: uuid.UUID | str) -> tuple[str | None, int, bool]:
    """The task's state, its last event's number and whether it has webhooks ((None, 0,
    False): no such task)."""
    found = (
        Task.objects.filter(id=task_id).values_list("state", "last_sequence", "push_enabled")
    ).first()
    return found or (None, 0, False)


def released(read: Callable[..., T], *args: Any) -> T:
    """`read(*args)`, then this thread's connection given back at once (a thread of a pool,
    or one that serves a long stream next, holds none while it waits)."""
    try:
        return read(*args)
    finally:
        connection.close()
