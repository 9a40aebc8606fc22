"""Where apps above `tasks` take part in the writer's work without `tasks` importing them.

`config_given` runs when a send carries a push config (a new task, or a follow-up accepted
by the task), and makes the task followed (`push_enabled`). For followed tasks the writer
calls `events_written` for every change. Both run inside the transaction that stores the
change, so what a hook writes commits or rolls back with it (an outbox); `committed` runs
after the commit.
Apps append to the lists from their `AppConfig.ready()`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from a2a.types import a2a_pb2 as pb

    from tasks.models import Task, TaskEvent

# A send's push config, for the task it was accepted by: the hook stores the config.
config_given: list[Callable[[Task, pb.TaskPushNotificationConfig], object]] = []
# Events the writer stored for a followed task.
events_written: list[Callable[[Task, Sequence[TaskEvent]], object]] = []
# After the commit of a followed task's change, by task id.
committed: list[Callable[[str], object]] = []


def run_config_given(task: Task, config: pb.TaskPushNotificationConfig) -> None:
    for hook in config_given:
        hook(task, config)


def run_events_written(task: Task, events: Sequence[TaskEvent]) -> None:
    for hook in events_written:
        hook(task, events)


def run_committed(task_id: str) -> None:
    for hook in committed:
        hook(task_id)
