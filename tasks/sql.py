"""A new task's rows in one SQL statement, for PostgreSQL.

A fast agent's whole turn (the task, its messages, artifacts and events) is written when its
first flush comes. Through the ORM that is six round trips (BEGIN, four INSERTs, COMMIT) and
most of a request's CPU; chained as data-modifying CTEs it is one statement, atomic on its
own. Foreign keys are checked at the end of the statement, when every row is there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from django.db import connection
from django.db.models import AutoField, BigAutoField, Field, Model


def insert_values(objs: Sequence[Model]) -> tuple[str, list[Any]]:
    model = type(objs[0])
    fields = [
        f
        for f in model._meta.concrete_fields
        if not (f.primary_key and isinstance(f, AutoField | BigAutoField))
    ]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    sql = (
        f"INSERT INTO {connection.ops.quote_name(model._meta.db_table)} ({columns}) "
        f"VALUES {', '.join([row] * len(objs))}"
    )
    params = [f.get_db_prep_save(f.pre_save(obj, True), connection) for obj in objs for f in fields]
    return sql, params


def insert_all(groups: Sequence[Sequence[Model]]) -> None:
    """Insert every non-empty group, in order, in one statement."""
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
    from tasks.models import Task

    values: dict[str, Any] = {"state": state, "updated_at": now, "heartbeat_at": now}
    values |= status or {}
    fields = {name: cast(Field, Task._meta.get_field(name)) for name in values}
    sets = ", ".join(f"{connection.ops.quote_name(f.column)} = %s" for f in fields.values())
    params = [fields[name].get_db_prep_save(value, connection) for name, value in values.items()]
    id_field = cast(Field, Task._meta.get_field("id"))
    statement = (
        f"UPDATE {Task._meta.db_table} SET {sets}, last_sequence = last_sequence + %s "
        "WHERE id = %s AND state = %s RETURNING last_sequence, push_enabled"
    )
    params += [new_events, id_field.get_db_prep_value(task_id, connection), expected]
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        row = cursor.fetchone()
    return None if row is None else (int(row[0]), bool(row[1]))
