"""Where apps above `tasks` take part in the writer's work without `tasks` importing them.

The writer calls these for tasks with `push_enabled` set (somebody outside the hub follows
them): `task_opened` and `events_written` inside the transaction that stores the change, so
what a hook writes commits or rolls back with it (an outbox), and `committed` after commit.
Apps append to the lists from their `AppConfig.ready()`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from a2a.types import a2a_pb2 as pb

    from tasks.models import Task, TaskEvent

# A new task that arrived with a push config: the hook stores the config.
task_opened: list[Callable[[Task, pb.TaskPushNotificationConfig], object]] = []
# Events the writer stored for a followed task.
events_written: list[Callable[[Task, Sequence[TaskEvent]], object]] = []
# After the commit of a followed task's change, by task id.
committed: list[Callable[[str], object]] = []


def run_task_opened(task: Task, config: pb.TaskPushNotificationConfig) -> None:
    for hook in task_opened:
        hook(task, config)


def run_events_written(task: Task, events: Sequence[TaskEvent]) -> None:
    for hook in events_written:
        hook(task, events)


def run_committed(task_id: str) -> None:
    for hook in committed:
        hook(task_id)
