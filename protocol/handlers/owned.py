"""Which stored tasks a call may touch: the caller's own on the call's agent. Any other task
does not exist for them."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet

from a2ahub.errors import TaskNotFoundError
from protocol.calls import Call
from tasks.models import Task
from tasks.wire import V01


def owned_task(call: Call, task_id: str) -> Task:
    """The caller's task on this agent; any other task does not exist for them. A 0.1 caller
    names its tasks by the ids it gave them, the others by the hub's."""
    if call.version == V01:
        task = caller_tasks(call).filter(client_id=task_id).first() if task_id else None
    else:
        task = caller_tasks(call).filter(id=task_key(task_id)).first()
    if task is None:
        raise not_found(task_id)
    return task


def task_key(task_id: str) -> uuid.UUID:
    """The hub's id of a task, as a client names it (not one at all: no such task)."""
    try:
        return uuid.UUID(task_id)
    except (ValueError, AttributeError):
        raise not_found(task_id) from None


def not_found(task_id: str) -> TaskNotFoundError:
    return TaskNotFoundError(f"Task {shown(task_id)} was not found.")


# An id the client sent is echoed in an error up to this long: a 100 KB id made a gRPC
# answer whose status no client would read (metadata is capped at 16 KB).
SHOWN_ID_CHARS = 80


def shown(task_id: str) -> str:
    """A client's id as an error names it."""
    if len(task_id) <= SHOWN_ID_CHARS:
        return repr(task_id)
    return f"{task_id[:SHOWN_ID_CHARS]!r}... ({len(task_id)} characters)"


def caller_tasks(call: Call) -> QuerySet[Task]:
    return Task.objects.filter(agent=call.agent, owner=call.principal.id)


def is_new_client_id(call: Call, client_id: str) -> bool:
    """Whether a 0.1 caller has no task by this id on this agent yet (its send starts one)."""
    return not caller_tasks(call).filter(client_id=client_id).exists()
