"""A new task's rows in one SQL statement, for PostgreSQL.

A fast agent's whole turn (the task, its messages, artifacts and events) is written when its
first flush comes. Through the ORM that is six round trips (BEGIN, four INSERTs, COMMIT) and
most of a request's CPU; chained as data-modifying CTEs it is one statement, atomic on its
own. Foreign keys are checked at the end of the statement, when every row is there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection
from django.db.models import AutoField, BigAutoField, Model


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
