"""Where apps above `tasks` add rows to the writer's plans without `tasks` importing them.

For a change to a task with webhooks, and for a write that gives a task its first (or
another) push config, the writer asks `planned_rows` for the rows the change adds besides its
own: push's config and one delivery per new event. The store writes them with the change, in
one statement or one transaction, so what a hook adds commits or rolls back with it (an
outbox). Hooks return rows, never SQL: each store turns them into its own writes. `committed`
runs once such a change is stored: on the event loop that made the write (`on_loop`, which
must not wait), or from any thread after the commit. Apps append to the lists from their
`AppConfig.ready()`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.db.models import Model

if TYPE_CHECKING:
    from a2a.types import a2a_pb2 as pb

    from tasks.models import Task


@dataclass(frozen=True)
class OfEvent:
    """A value taken from each event the write adds: its `id` or its `sequence`."""

    name: str


@dataclass(frozen=True)
class OfSource:
    """A value taken from each matching row of a `PerEvent`'s source model."""

    name: str


@dataclass
class Replace:
    """A row inserted or, when one with the same `key` fields is stored, written over it
    (its fields `update` only)."""

    row: Model
    key: tuple[str, ...]
    update: tuple[str, ...]


@dataclass
class PerEvent:
    """One row of `model` for each event the write adds and each row of `source` matching
    `where` (rows the same write inserts or replaces included). `values` gives each field a
    constant, an `OfEvent` or an `OfSource`; a field left out takes its default."""

    model: type[Model]
    values: dict[str, Any]
    source: type[Model]
    where: dict[str, Any] = field(default_factory=dict)


Row = Replace | PerEvent

# For a task (with its id, context and protocol version: the version of the request that
# gives the config, for a follow-up) and the push config a write gives it (None: a change of
# a task that has webhooks), the rows the write adds.
planned_rows: list[Callable[[Task, pb.TaskPushNotificationConfig | None], Sequence[Row]]] = []
# After the commit of a followed task's change: the task's id, the sequence of the last event
# it wrote (0: none, or not known), and whether on the loop.
committed: list[Callable[[str, int, bool], object]] = []


def rows_for(task: Task, config: pb.TaskPushNotificationConfig | None) -> list[Row]:
    return [row for hook in planned_rows for row in hook(task, config)]


def run_committed(task_id: str, sequence: int, on_loop: bool) -> None:
    for hook in committed:
        hook(task_id, sequence, on_loop)
