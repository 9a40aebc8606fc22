"""Task writes in one SQL statement each, for PostgreSQL, and the claim of a stored task.

A fast agent's whole turn (the task, its messages, artifacts and events) is written when its
first flush comes. Through the ORM that is six round trips (BEGIN, four INSERTs, COMMIT) and
most of a request's CPU; chained as data-modifying CTEs it is one statement, atomic on its
own. Foreign keys are checked at the end of the statement, when every row is there. A stored
task's batch of changes is one statement too (`record_statement`). The builders only build
(sql, params), so the same statement runs on Django's connection or an async one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, partial
from typing import Any, cast

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import (
    AutoField,
    BigAutoField,
    BooleanField,
    CharField,
    DateTimeField,
    Field,
    ForeignKey,
    IntegerField,
    JSONField,
    Model,
    TextField,
    UUIDField,
)
from psycopg.types.json import Jsonb

from a2ahub import jsonbytes


@cache
def builder() -> BaseDatabaseWrapper:
    """A connection object that is never connected, only asked to quote names and prepare
    values. Through the `connection` proxy each of those reads is a context-local lookup, and
    under ASGI each request's context would build a connection object of its own."""
    return connections.create_connection(DEFAULT_DB_ALIAS)


def insert_values(objs: Sequence[Model]) -> tuple[str, list[Any]]:
    _, head, row = insert_shape(type(objs[0]))
    return head + ", ".join([row] * len(objs)), row_params(objs)


def row_params(objs: Sequence[Model]) -> list[Any]:
    """The parameters of rows to insert, field by field, as Django would save them."""
    prepare = preparers(type(objs[0]))
    return [convert(getattr(obj, attname)) for obj in objs for attname, convert in prepare]


@cache
def preparers(model: type[Model]) -> list[tuple[str, Callable[[Any], Any]]]:
    """For each inserted field, the attribute to read and how its value becomes a parameter.
    Django's `get_db_prep_save` per value was a tenth of a streamed turn's CPU; for the kinds
    of field the task rows have, on PostgreSQL, it comes down to these."""
    db = builder()
    result: list[tuple[str, Callable[[Any], Any]]] = []
    for field in inserted_fields(model):
        convert: Callable[[Any], Any]
        if (
            db.vendor != "postgresql"
            or getattr(field, "auto_now", False)
            or getattr(field, "auto_now_add", False)
        ):
            convert = partial(prepared_by_django, field)
        elif isinstance(field, JSONField) and field.encoder is None:
            convert = as_jsonb
        elif isinstance(field, IntegerField):
            convert = as_int
        elif isinstance(field, PLAIN_FIELDS):
            convert = as_is
        else:
            convert = partial(prepared_by_django, field)
        result.append((field.attname, convert))
    return result


# Fields whose values the writers already give in the type PostgreSQL takes as it is.
PLAIN_FIELDS = (CharField, TextField, BooleanField, DateTimeField, UUIDField, ForeignKey)


def prepared_by_django(field: Field, value: Any) -> Any:
    return field.get_db_prep_save(value, builder())


def as_jsonb(value: Any) -> Any:
    return None if value is None else Jsonb(value, dumps=jsonbytes.dumps)


def as_int(value: Any) -> Any:
    return None if value is None else int(value)


def as_is(value: Any) -> Any:
    return value


@cache
def insert_shape(model: type[Model]) -> tuple[list[Field], str, str]:
    """A model's inserted fields, its `INSERT INTO ... VALUES ` and one row's placeholders."""
    fields = [
        f
        for f in model._meta.concrete_fields
        if not (f.primary_key and isinstance(f, AutoField | BigAutoField))
    ]
    quote = builder().ops.quote_name
    columns = ", ".join(quote(f.column) for f in fields)
    head = f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES "
    return fields, head, "(" + ", ".join(["%s"] * len(fields)) + ")"


def insert_all_statement(groups: Sequence[Sequence[Model]]) -> tuple[str, list[Any]]:
    """One statement inserting every non-empty group, in order."""
    parts = [insert_values(group) for group in groups if group]
    *first, last = parts
    sql = ""
    params: list[Any] = []
    if first:
        sql = "WITH " + ", ".join(f"w{i} AS ({part})" for i, (part, _) in enumerate(first)) + " "
        for _, part_params in first:
            params.extend(part_params)
    sql += last[0]
    params.extend(last[1])
    return sql, params


def insert_all(groups: Sequence[Sequence[Model]]) -> None:
    sql, params = insert_all_statement(groups)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def can_insert_in_one_statement() -> bool:
    return connection.vendor == "postgresql" and not connection.in_atomic_block


def update_task(
    task_id: Any,
    expected: str,
    state: str,
    new_events: int,
    now: Any,
    status: dict[str, Any] | None,
) -> tuple[int, bool] | None:
    """The conditional UPDATE of a task's state, returning its new event count and whether it
    has webhooks; None when the task is no longer in the `expected` state."""
    statement, params = update_statement(task_id, expected, state, new_events, now, status)
    row = fetch_one(statement + " RETURNING last_sequence, push_enabled", params)
    return None if row is None else (int(row[0]), bool(row[1]))


def update_statement(
    task_id: Any,
    expected: str,
    state: str,
    new_events: int,
    now: Any,
    status: dict[str, Any] | None,
    without_push: bool = False,
) -> tuple[str, list[Any]]:
    from tasks.models import Task

    db = builder()
    values: dict[str, Any] = {"state": state, "updated_at": now, "heartbeat_at": now}
    values |= status or {}
    fields = {name: cast(Field, Task._meta.get_field(name)) for name in values}
    sets = ", ".join(f"{db.ops.quote_name(f.column)} = %s" for f in fields.values())
    params = [fields[name].get_db_prep_save(value, db) for name, value in values.items()]
    id_field = cast(Field, Task._meta.get_field("id"))
    statement = (
        f"UPDATE {Task._meta.db_table} SET {sets}, last_sequence = last_sequence + %s "
        "WHERE id = %s AND state = %s"
    )
    params += [new_events, id_field.get_db_prep_value(task_id, db), expected]
    if without_push:
        statement += " AND NOT push_enabled"
    return statement, params


def record_statement(
    task_id: Any,
    expected: str,
    state: str,
    now: Any,
    status: dict[str, Any] | None,
    rows: RecordRows,
) -> tuple[str, list[Any]]:
    """One statement applying a batch of changes to a task without webhooks (PostgreSQL).

    The conditional UPDATE comes first; every INSERT reads its result, so a task that moved
    on (or got a webhook meanwhile) gets nothing written. Events are numbered after the
    UPDATE's new `last_sequence`. The statement returns that number, or no row when refused.
    The events' `sequence` must be 1..n, in order.
    """
    events = rows.events
    update, params = update_statement(
        task_id, expected, state, len(events), now, status, without_push=True
    )
    parts = [f"u AS ({update} RETURNING last_sequence)"]
    for name, group in (("m", rows.messages), ("a", rows.artifacts)):
        if group:
            insert, values = insert_select(
                group, "SELECT v.* FROM {values} WHERE EXISTS (SELECT 1 FROM u)"
            )
            parts.append(f"{name} AS ({insert})")
            params += values
    if events:
        numbered = f"u.last_sequence - {len(events)} + v.{builder().ops.quote_name('sequence')}"
        insert, values = insert_select(
            events, "SELECT {columns} FROM u, {values}", {"sequence": numbered}
        )
        parts.append(f"e AS ({insert})")
        params += values
    return "WITH " + ", ".join(parts) + " SELECT last_sequence FROM u", params


@dataclass
class RecordRows:
    """The new rows of one batch of changes, as `lifecycle.Writer` collects them."""

    messages: Sequence[Model]
    artifacts: Sequence[Model]
    events: Sequence[Model]


def insert_select(
    objs: Sequence[Model], select: str, replace: dict[str, str] | None = None
) -> tuple[str, list[Any]]:
    """`INSERT ... SELECT` of rows given as a VALUES list named `v`, typed by explicit casts
    (a bare parameter in VALUES has no column to take its type from). `select` names the
    VALUES list `{values}` and its columns `{columns}`; `replace` puts an expression in place
    of a column's value."""
    model = type(objs[0])
    fields, names, row = typed_columns(model)
    db = builder()
    quote = db.ops.quote_name
    values = f"(VALUES {', '.join([row] * len(objs))}) AS v({', '.join(names)})"
    replace = replace or {}
    columns = ", ".join(replace.get(f.name, f"v.{quote(f.column)}") for f in fields)
    statement = f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(names)}) " + select.format(
        values=values, columns=columns
    )
    return statement, row_params(objs)


def inserted_fields(model: type[Model]) -> list[Field]:
    return [
        f
        for f in model._meta.concrete_fields
        if not (f.primary_key and isinstance(f, AutoField | BigAutoField))
    ]


@cache
def typed_columns(model: type[Model]) -> tuple[list[Field], list[str], str]:
    """A model's inserted fields, their quoted column names, and a VALUES row with a typed
    parameter for each (made once: every write of a turn needs them)."""
    fields = inserted_fields(model)
    names = [builder().ops.quote_name(f.column) for f in fields]
    row = "(" + ", ".join(f"%s::{f.db_type(builder())}" for f in fields) + ")"
    return fields, names, row


def fetch_all(statement: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return [tuple(row) for row in cursor.fetchall()]


def fetch_one(statement: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        row = cursor.fetchone()
    return None if row is None else tuple(row)


CLAIMED_COLUMNS = (
    "agent_id", "owner", "context_id", "protocol_version", "execution_mode", "metadata",
    "state", "push_enabled",
)  # fmt: skip


def claim_statement(task_id: Any, token: str, runner: str, now: Any) -> tuple[str, list[Any]]:
    """The conditional UPDATE by which one job claims a stored task (only the job holding the
    task's token may), returning what the turn needs of the task (`CLAIMED_COLUMNS`)."""
    from tasks.models import ACTIVE_STATES, Task

    field = Task._meta.get_field
    quote = builder().ops.quote_name
    states = sorted(ACTIVE_STATES)
    statement = (
        f"UPDATE {quote(Task._meta.db_table)} SET runner = %s, heartbeat_at = %s "
        f"WHERE id = %s AND runner = %s AND state IN ({', '.join(['%s'] * len(states))}) "
        f"RETURNING {', '.join(quote(cast(Field, field(c)).column) for c in CLAIMED_COLUMNS)}"
    )
    params = [
        runner,
        cast(Field, field("heartbeat_at")).get_db_prep_save(now, builder()),
        cast(Field, field("id")).get_db_prep_value(task_id, builder()),
        token,
        *states,
    ]
    return statement, params


MESSAGE_COLUMNS = (
    "message_id", "context_id", "role", "parts", "reference_task_ids", "extensions", "metadata",
)  # fmt: skip


def claim_task(task_id: Any, token: str, runner: str, now: Any) -> Claimed | None:
    """Claim a stored task (`claim_statement`) and read its messages, in order: one statement
    on PostgreSQL, two elsewhere. None when another job has it or it is over."""
    from tasks.models import Message, Task

    claim, params = claim_statement(task_id, token, runner, now)
    key = cast(Field, Task._meta.get_field("id")).get_db_prep_value(task_id, builder())
    quote = builder().ops.quote_name
    table, position = quote(Message._meta.db_table), quote("position")
    columns = ", ".join(f"m.{quote(c)}" for c in MESSAGE_COLUMNS)
    if builder().vendor == "postgresql":
        rows = fetch_all(
            f"WITH c AS ({claim}) SELECT c.*, {columns} FROM c "
            f"LEFT JOIN {table} m ON m.task_id = %s ORDER BY m.{position}",
            [*params, key],
        )
        if not rows:
            return None
        width = len(CLAIMED_COLUMNS)
        task_row, message_rows = rows[0][:width], [r[width:] for r in rows if r[width] is not None]
    else:
        found = fetch_one(claim, params)
        if found is None:
            return None
        select = f"SELECT {columns} FROM {table} m WHERE m.task_id = %s ORDER BY m.{position}"
        task_row, message_rows = found, fetch_all(select, [key])
    claimed = converted(Task, CLAIMED_COLUMNS, task_row)
    claimed["push_enabled"] = bool(claimed["push_enabled"])
    messages = [
        Message(task_id=task_id, **converted(Message, MESSAGE_COLUMNS, row)) for row in message_rows
    ]
    return Claimed(claimed, messages)


@dataclass
class Claimed:
    task: dict[str, Any]  # CLAIMED_COLUMNS
    messages: list[Any]  # Message rows, in order


def converted(model: type[Model], names: Sequence[str], values: Sequence[Any]) -> dict[str, Any]:
    """Raw column values as the model's fields hold them (JSON decoded, say)."""
    result = {}
    for name, value in zip(names, values, strict=True):
        converter = getattr(model._meta.get_field(name), "from_db_value", None)
        result[name] = converter(value, None, builder()) if converter else value
    return result
