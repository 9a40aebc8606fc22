"""A stored task read back as the protocol's Task, with as much history as asked for."""

from __future__ import annotations

import uuid

from a2a.types import a2a_pb2 as pb
from django.db import connection, transaction

from tasks.models import Message, Task
from tasks.wire import task_to_pb


def load_task(task: Task, history_length: int | None, artifacts: bool = True) -> pb.Task:
    history: list[Message] = []
    if history_length is None:
        history = list(Message.objects.filter(task=task))
    elif history_length > 0:
        newest = Message.objects.filter(task=task).order_by("-position")[:history_length]
        history = list(reversed(newest))
    return task_to_pb(task, history, task.artifacts.all() if artifacts else [])


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
