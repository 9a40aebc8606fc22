"""Where apps above `tasks` take part in the writer's work without `tasks` importing them.

`config_given` runs when a send carries a push config (a new task, or a follow-up accepted
by the task), and makes the task followed (`push_enabled`). For followed tasks the writer
calls `events_written` for every change. Both run inside the transaction that stores the
change, so what a hook writes commits or rolls back with it (an outbox); `committed` runs
after the commit.

A new task given a push config can be written in one statement from the event loop
(PostgreSQL): `opening_parts` then gives the statement parts that store the config and a
delivery of each event, and `committed_soon` runs on the loop once the statement is done.
Without an `opening_parts` hook such a task is written through the ORM.
Apps append to the lists from their `AppConfig.ready()`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from a2a.types import a2a_pb2 as pb

    from tasks.models import Task, TaskEvent

# A send's push config, for the task it was accepted by: the hook stores the config.
config_given: list[Callable[[Task, pb.TaskPushNotificationConfig], object]] = []
# Events the writer stored for a followed task.
events_written: list[Callable[[Task, Sequence[TaskEvent]], object]] = []
# After the commit of a followed task's change, by task id.
committed: list[Callable[[str], object]] = []
# For a new task and its push config: data-modifying parts of a `WITH` (`name AS (...)`,
# comma-separated, `%s` placeholders) that follow the part named `NEW_EVENTS` in
# `tasks.sql`, which returns the new events' `id` and `sequence`; and their parameters.
opening_parts: list[Callable[[Task, pb.TaskPushNotificationConfig], tuple[str, list[Any]]]] = []
# After a one-statement write of a followed task, on the event loop that made it, by task id.
committed_soon: list[Callable[[str], object]] = []


def run_config_given(task: Task, config: pb.TaskPushNotificationConfig) -> None:
    for hook in config_given:
        hook(task, config)


def run_events_written(task: Task, events: Sequence[TaskEvent]) -> None:
    for hook in events_written:
        hook(task, events)


def run_committed(task_id: str) -> None:
    for hook in committed:
        hook(task_id)


def run_committed_soon(task_id: str) -> None:
    for hook in committed_soon:
        hook(task_id)
