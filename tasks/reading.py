"""A stored task read back as the protocol's Task, with as much history as asked for."""

from __future__ import annotations

from a2a.types import a2a_pb2 as pb

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
