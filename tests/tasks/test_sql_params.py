"""A task's rows written by the raw statements of `tasks.sql` are stored as the ORM stores them
(PostgreSQL). The same rows go in twice, under two task ids: through a raw statement, on
Django's connection or on the event loop's (asyncpg, with codecs of its own), and through
`save()`, `update()` and `bulk_create()`. Read back from the tables, every column but the keys
is equal, so a wrong column name or a wrong conversion of a value shows here.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb
from django.db import connection
from django.db.models import F, Model
from django.utils import timezone

from a2ahub import asyncdb
from agents.models import Agent
from tasks import sql
from tasks.changes import (
    ArtifactChange,
    Change,
    NewTask,
    Plan,
    StatusChange,
    apply_changes,
    plan_open,
)
from tasks.models import Artifact, Message, Task, TaskEvent, TaskState
from tests.helpers import postgresql_only

S = TaskState
MODELS: tuple[type[Model], ...] = (Task, Message, Artifact, TaskEvent)
Rows = list[list[Model]]  # a task, its messages, artifacts and events

pytestmark = [
    pytest.mark.django_db(transaction=True),
    postgresql_only("the raw statements are PostgreSQL's"),
    pytest.mark.parametrize("on", ["django", "loop"]),
]


@pytest.fixture
def agent(db: None) -> Agent:
    return Agent.objects.create(
        slug="twice", name="Twice", description="Its rows are written twice.", executor_kind="echo"
    )


def message(role: pb.Role.ValueType, text: str) -> pb.Message:
    written = pb.Message(message_id=uuid.uuid4().hex, role=role, reference_task_ids=["t-0"])
    written.parts.add(text=text)
    written.metadata.update({"trace": "abc", "n": 2})
    written.extensions.append("https://example.com/ext")
    return written


def artifact() -> pb.Artifact:
    made = pb.Artifact(artifact_id="a-1", name="out", description="what came out")
    made.parts.add(text="chunk")
    made.parts.add().data.struct_value.update({"rows": [1, 2.5, "ü"]})
    made.metadata.update({"k": "v"})
    made.extensions.append("https://example.com/ext")
    return made


def a_turn(end: TaskState) -> list[Change]:
    return [
        StatusChange(S.WORKING),
        ArtifactChange(artifact(), last_chunk=True),
        StatusChange(end, message(pb.ROLE_AGENT, "done?")),
    ]


def new_task_rows(agent: Agent, changes: Sequence[Change]) -> Rows:
    spec = NewTask(
        agent_id=agent.pk, owner="apikey:x", context_id="ctx", message=message(pb.ROLE_USER, "hi"),
        protocol_version="1.0", execution_mode="inline", metadata={"k": "v"},
    )  # fmt: skip
    task, writer, _ = plan_open(spec, changes, runner="host:1")
    return [[task], writer.messages, writer.artifacts, writer.events]


def clone(row: Model, **values: Any) -> Model:
    """The row with `values` changed, as a new object."""
    fields = {f.attname: getattr(row, f.attname) for f in row._meta.concrete_fields}
    if row._meta.pk.auto_created:
        del fields[row._meta.pk.attname]
    return type(row)(**(fields | values))


def copied(rows: Rows, task_id: uuid.UUID) -> Rows:
    """The same rows, of a task with another id."""
    (task,), *others = rows
    return [[clone(task, id=task_id)], *[[clone(r, task_id=task_id) for r in g] for g in others]]


def save_with_orm(rows: Rows) -> None:
    (task,), *others = rows
    task.save(force_insert=True)
    for group in others:
        if group:
            type(group[0]).objects.bulk_create(group)


def run(statement: str, params: list[Any], on: str) -> list[tuple[Any, ...]]:
    """Run a raw statement on Django's connection or on the event loop's."""
    if on == "django":
        with connection.cursor() as cursor:
            cursor.execute(statement, params)
            return [tuple(row) for row in cursor.fetchall()] if cursor.description else []

    async def on_the_loop() -> list[tuple[Any, ...]]:
        try:
            return await asyncdb.execute(statement, params, fetch=True)
        finally:
            await asyncdb.close()

    return asyncio.run(on_the_loop())


def stored(task_id: uuid.UUID) -> dict[str, list[dict[str, Any]]]:
    """Every column of the task's rows as the tables hold them, but the keys."""
    return {model._meta.db_table: table_rows(model, task_id) for model in MODELS}


def table_rows(model: type[Model], task_id: uuid.UUID) -> list[dict[str, Any]]:
    quote = connection.ops.quote_name
    by = (model._meta.pk if model is Task else model._meta.get_field("task")).column
    keys = {model._meta.pk.column, by}
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT * FROM {quote(model._meta.db_table)} WHERE {quote(by)} = %s", [task_id]
        )
        names = [column.name for column in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    return sorted(({n: v for n, v in row.items() if n not in keys} for row in rows), key=repr)


def assert_stored_alike(raw_id: uuid.UUID, orm_id: uuid.UUID) -> None:
    by_raw, by_orm = stored(raw_id), stored(orm_id)
    assert all(by_raw.values()), "every table has rows of the task"
    for table, rows in by_orm.items():
        assert by_raw[table] == rows, table


def test_a_new_tasks_rows_are_stored_as_the_orm_stores_them(agent: Agent, on: str) -> None:
    rows = new_task_rows(agent, a_turn(S.COMPLETED))
    task = rows[0][0]
    # Values other than the defaults, so that two columns swapped would show.
    task.last_error, task.push_enabled = "a last error", True
    orm_id = uuid.uuid4()

    run(*sql.insert_all_statement(rows), on=on)
    save_with_orm(copied(rows, orm_id))

    assert_stored_alike(task.id, orm_id)


def test_a_batch_of_changes_is_stored_as_the_orm_stores_it(agent: Agent, on: str) -> None:
    opened = new_task_rows(agent, [])
    raw_id, orm_id, first_events = opened[0][0].pk, uuid.uuid4(), len(opened[3])
    save_with_orm(opened)
    save_with_orm(copied(opened, orm_id))
    now, changes = timezone.now(), a_turn(S.INPUT_REQUIRED)
    shell = Task(id=raw_id, context_id="ctx", state=S.SUBMITTED)
    writer = Plan(shell, 0, now)  # as `writer.record` collects a batch
    apply_changes(writer, changes, {}, len(opened[1]))
    status = {"status_message": shell.status_message, "status_timestamp": shell.status_timestamp}
    values = {"state": S.INPUT_REQUIRED, "updated_at": now, "heartbeat_at": now, **status}
    batch = sql.Change(
        raw_id, (S.SUBMITTED,), values, writer.messages, writer.artifacts, [], writer.events
    )

    returned = run(*sql.change_statement(batch), on=on)
    Task.objects.filter(id=orm_id).update(
        state=S.INPUT_REQUIRED, updated_at=now, heartbeat_at=now,
        last_sequence=F("last_sequence") + len(writer.events), **status,
    )  # fmt: skip
    Message.objects.bulk_create([clone(m, task_id=orm_id) for m in writer.messages])
    Artifact.objects.bulk_create([clone(a, task_id=orm_id) for a in writer.artifacts])
    TaskEvent.objects.bulk_create(
        [clone(e, task_id=orm_id, sequence=e.sequence + first_events) for e in writer.events]
    )

    assert returned == [(first_events + len(writer.events), False)]
    assert_stored_alike(raw_id, orm_id)
