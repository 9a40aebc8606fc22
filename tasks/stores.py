"""The two stores the writer applies its plans through, one chosen once at start-up.

On PostgreSQL every plan is one statement (`tasks.sql`): on the event loop's asyncpg pool for
requests served by the hub's ASGI app (`asyncdb.available()`), else on Django's connection
(tests inside a transaction, management commands, worker jobs, and a plan carrying a big
body: asyncpg encodes its values on the loop, some 80 ms for a 10 MB message's four rows).
Elsewhere (SQLite, an embedded hub) the portable store writes the same rows through the ORM
in one transaction.
Both honour the rows other apps add (`tasks.hooks`), and both tell listeners once the write
is committed: the task's events, and the `committed` hooks for a task with webhooks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from functools import cache
from typing import Any, Protocol

import psycopg
from asgiref.sync import sync_to_async
from django.db import connection, transaction
from django.db.models import F, Model

from a2ahub import asyncdb
from a2ahub.outages import DATABASE_AWAY
from tasks import events, hooks, sql
from tasks.changes import Plan, number_events
from tasks.columns import field
from tasks.hooks import OfEvent, OfSource, PerEvent, Replace, Row
from tasks.models import Artifact, Message, Task, TaskEvent

# Set by a streaming request: its writes on Django's connection give it back at once, since
# the request (and its thread) lives as long as the stream.
release_after_write: ContextVar[bool] = ContextVar("release_after_write", default=False)

# What a change left: the task's new event count and whether it has webhooks; None: refused.
Changed = tuple[int, bool] | None


class Store(Protocol):
    async def insert(self, plan: Plan, extra: Sequence[Row], big: bool = False) -> None:
        """Store a new task (`plan.task`) with the plan's rows and `extra`; `big`: the rows
        carry a big body (`a2ahub.big_bodies`)."""

    async def change(self, change: sql.Change, plan: Plan, big: bool = False) -> Changed:
        """Apply a batch of changes to a stored task if it is as `change` expects; numbers
        the plan's events."""


@cache
def store() -> Store:
    return PostgresStore() if asyncdb.on_postgresql() else OrmStore()


def announce(plan: Plan, followed: bool, on_loop: bool) -> None:
    """Tell listeners of a committed write: on the loop that made it, or from any thread."""
    task_id = str(plan.task.id)
    published = [(e.sequence, e.payload) for e in plan.events]
    if on_loop:
        events.publish_soon(task_id, published)
    else:
        events.publish(task_id, published)
    if followed:
        hooks.run_committed(task_id, published[-1][0] if published else 0, on_loop)


def after_commit(plan: Plan, followed: bool) -> None:
    transaction.on_commit(lambda: announce(plan, followed, on_loop=False))


def new_rows(plan: Plan) -> list[Sequence[Model]]:
    return [[plan.task], plan.messages, plan.artifacts, plan.events]


class PostgresStore:
    async def insert(self, plan: Plan, extra: Sequence[Row], big: bool = False) -> None:
        statement, params = sql.insert_all_statement(new_rows(plan), extra)
        followed = plan.task.push_enabled
        if asyncdb.available() and not big:
            await asyncdb.execute(statement, params)
            announce(plan, followed, on_loop=True)
        else:
            await sync_to_async(on_django)(statement, params, lambda _: (plan, followed), big)

    async def change(self, change: sql.Change, plan: Plan, big: bool = False) -> Changed:
        statement, params = sql.change_statement(change)

        def written(rows: list[tuple[Any, ...]]) -> tuple[Plan, bool] | None:
            if not rows:
                return None
            number_events(plan, int(rows[0][0]))
            return plan, bool(rows[0][1])

        if asyncdb.available() and not big:
            rows = await asyncdb.execute(statement, params, fetch=True)
            if written(rows) is not None:
                announce(plan, bool(rows[0][1]), on_loop=True)
        else:
            rows = await sync_to_async(on_django)(statement, params, written, big)
        return (int(rows[0][0]), bool(rows[0][1])) if rows else None


def on_django(
    statement: str,
    params: list[Any],
    written: Callable[[list[tuple[Any, ...]]], tuple[Plan, bool] | None],
    big: bool = False,
) -> list[tuple[Any, ...]]:
    """Run one statement on Django's connection (in a savepoint inside a transaction, so a
    refused statement leaves the transaction usable) and announce it after the commit."""
    try:
        if connection.in_atomic_block:
            with transaction.atomic():
                rows = run(statement, params, big)
        else:
            rows = run(statement, params, big)
        done = written(rows)
        if done is not None:
            after_commit(*done)
        return rows
    except DATABASE_AWAY:
        # Django keeps a connection the database dropped: the write's retry needs a new one.
        if not connection.in_atomic_block:
            connection.close()
        raise
    finally:
        # Never inside a transaction: closing would end it (a caller's, a test's).
        if release_after_write.get() and not connection.in_atomic_block:
            connection.close()


def run(statement: str, params: list[Any], big: bool = False) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        if not big:
            return sql.rows_of(cursor, statement, params)
        # Django's cursor binds on the client: it would quote a big body into the statement's
        # text, holding the GIL (and so the event loop) for a tenth of a second. Bound on the
        # server, the values go out as they are.
        with connection.wrap_database_errors, psycopg.Cursor(cursor.connection) as server:
            return sql.rows_of(server, statement, params)


class OrmStore:
    """The same writes through the ORM, in one transaction each (any database)."""

    async def insert(self, plan: Plan, extra: Sequence[Row], big: bool = False) -> None:
        await sync_to_async(self.insert_now)(plan, extra)

    def insert_now(self, plan: Plan, extra: Sequence[Row]) -> None:
        with transaction.atomic():
            plan.task.save(force_insert=True)
            save_rows(plan, extra)
            after_commit(plan, plan.task.push_enabled)

    async def change(self, change: sql.Change, plan: Plan, big: bool = False) -> Changed:
        return await sync_to_async(self.change_now)(change, plan)

    def change_now(self, change: sql.Change, plan: Plan) -> Changed:
        with transaction.atomic():
            tasks = Task.objects.filter(id=change.task_id, state__in=change.states)
            if change.owner is not None:
                tasks = tasks.filter(owner=change.owner)
            if change.without_push:
                tasks = tasks.filter(push_enabled=False)
            if change.sequence is not None:
                tasks = tasks.filter(last_sequence=change.sequence)
            sequence = F("last_sequence") + len(plan.events)
            if not tasks.update(**change.values, last_sequence=sequence):
                return None
            last, followed = (
                Task.objects.filter(id=change.task_id)
                .values_list("last_sequence", "push_enabled")
                .get()
            )
            number_events(plan, last)
            save_rows(plan, change.extra)
            after_commit(plan, followed)
        return last, followed


def save_rows(plan: Plan, extra: Sequence[Row]) -> None:
    Message.objects.bulk_create(plan.messages)
    Artifact.objects.bulk_create(plan.artifacts)
    for row in plan.updated_artifacts:
        # By its natural key: a row inserted by a one-statement write has no id here.
        Artifact.objects.filter(task_id=row.task_id, artifact_id=row.artifact_id).update(
            parts=row.parts, name=row.name, updated_at=row.updated_at
        )
    TaskEvent.objects.bulk_create(plan.events)
    for added in extra:
        if isinstance(added, Replace):
            replace(added)
        else:
            added.model._default_manager.bulk_create(per_event(added, plan.events))


def replace(row: Replace) -> None:
    model = type(row.row)
    names = {n: field(model, n).attname for n in (*row.key, *row.update)}
    stored = model._default_manager.filter(
        **{names[n]: getattr(row.row, names[n]) for n in row.key}
    )
    if not stored.update(**{names[n]: getattr(row.row, names[n]) for n in row.update}):
        row.row.save(force_insert=True)


def per_event(row: PerEvent, new_events: Sequence[TaskEvent]) -> list[Model]:
    made = []
    for source in row.source._default_manager.filter(**row.where):
        for event in new_events:
            obj = row.model()
            for name, value in row.values.items():
                if isinstance(value, OfEvent):
                    value = getattr(event, value.name)
                elif isinstance(value, OfSource):
                    value = getattr(source, field(row.source, value.name).attname)
                setattr(obj, field(row.model, name).attname, value)
            made.append(obj)
    return made
