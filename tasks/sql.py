"""Task writes in one SQL statement each, for PostgreSQL, and the claim of a stored task.

A fast agent's whole turn (the task, its messages, artifacts and events) is written when its
first flush comes. Through the ORM that is six round trips (BEGIN, four INSERTs, COMMIT) and
most of a request's CPU; chained as data-modifying CTEs it is one statement, atomic on its
own. Foreign keys are checked at the end of the statement, when every row is there. A stored
task's batch of changes is one statement too (`record_statement`). The builders only build
(sql, params), so the same statement runs on Django's connection or an async one. Names come
from the models (`tasks.columns`), each shape of statement is built once, and `tasks.checks`
stops start-up when a model gains something these statements do not do.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache, partial
from typing import Any

from django.db import connection
from django.db.models import (
    AutoField,
    BigAutoField,
    BigIntegerField,
    BooleanField,
    CharField,
    DateTimeField,
    Field,
    ForeignKey,
    IntegerField,
    JSONField,
    Model,
    PositiveIntegerField,
    TextField,
    UUIDField,
)
from django.db.models.fields import AutoFieldMixin
from psycopg.types.json import Jsonb

from a2ahub import jsonbytes
from tasks.columns import builder, column, columns, field, table
from tasks.hooks import OfEvent, OfSource, PerEvent, Replace, Row
from tasks.models import ACTIVE_STATES, Artifact, Message, Task, TaskEvent

# ---- Values -------------------------------------------------------------------------------


def as_jsonb(value: Any) -> Any:
    return None if value is None else Jsonb(value, dumps=jsonbytes.dumps)


def as_int(value: Any) -> Any:
    return None if value is None else int(value)


def as_is(value: Any) -> Any:
    return value


# For each kind of field the task rows have, how its values become parameters PostgreSQL takes
# as they are. Django's `get_db_prep_save` per value was a tenth of a streamed turn's CPU; for
# these it comes down to this. Exact classes: a subclass may prepare its values otherwise.
CONVERTERS: dict[type[Field], Callable[[Any], Any]] = {
    CharField: as_is,
    TextField: as_is,
    BooleanField: as_is,
    DateTimeField: as_is,
    UUIDField: as_is,
    IntegerField: as_int,
    PositiveIntegerField: as_int,
    BigIntegerField: as_int,
    AutoField: as_int,
    BigAutoField: as_int,
}


def converter(field: Field) -> Callable[[Any], Any] | None:
    """How a value of `field` becomes a parameter on PostgreSQL; None for a field this module
    does not know (`tasks.checks` refuses those at start-up)."""
    if type(field) is ForeignKey:
        return converter(field.target_field)
    if type(field) is JSONField:
        # The loop's connections encode JSON themselves (`a2ahub.asyncdb`): no encoder there.
        return as_jsonb if field.encoder is None else None
    return CONVERTERS.get(type(field))


def parameter(field: Field) -> Callable[[Any], Any]:
    """How the statements here pass a value of `field`: as Django would save it."""
    convert = converter(field) if builder().vendor == "postgresql" else None
    return convert or partial(prepared_by_django, field)


def prepared_by_django(field: Field, value: Any) -> Any:
    return field.get_db_prep_save(value, builder())


@cache
def task_parameter(name: str) -> Callable[[Any], Any]:
    return parameter(field(Task, name))


def task_key(task_id: Any) -> Any:
    """A task's id as a parameter (callers hold it as text or as a UUID)."""
    return field(Task, "id").get_db_prep_value(task_id, builder())


# ---- INSERTs of whole rows ------------------------------------------------------------------

# The models whose rows the statements here insert, every column but an automatic key.
INSERTED: tuple[type[Model], ...] = (Task, Message, Artifact, TaskEvent)


def is_automatic_key(field: Field) -> bool:
    return field.primary_key and isinstance(field, AutoFieldMixin)


def inserted_fields(model: type[Model]) -> list[Field]:
    return [f for f in model._meta.concrete_fields if not is_automatic_key(f)]


@cache
def preparers(
    model: type[Model], names: tuple[str, ...] | None = None
) -> list[tuple[str, Callable[[Any], Any]]]:
    """For each inserted field (or each of `names`), the attribute to read and how its value
    becomes a parameter."""
    fields = inserted_fields(model) if names is None else [field(model, n) for n in names]
    return [(f.attname, parameter(f)) for f in fields]


def row_params(objs: Sequence[Model], names: tuple[str, ...] | None = None) -> list[Any]:
    """The parameters of rows to insert (or their fields `names`), field by field, as Django
    would save them."""
    prepare = preparers(type(objs[0]), names)
    return [convert(getattr(obj, attname)) for obj in objs for attname, convert in prepare]


def inserted_names(model: type[Model]) -> tuple[str, ...]:
    return tuple(f.name for f in inserted_fields(model))


@lru_cache(maxsize=256)
def insert_sql(model: type[Model], count: int) -> str:
    """`INSERT INTO ... VALUES` of `count` rows of the model."""
    names = inserted_names(model)
    row = "(" + ", ".join(["%s"] * len(names)) + ")"
    rows = ", ".join([row] * count)
    return f"INSERT INTO {table(model)} ({columns(model, names)}) VALUES {rows}"


# The part of a statement that inserted the events, returning their id and sequence: the
# rows a hook adds per event read them from it.
NEW_EVENTS = "new_events"


def returned_events() -> str:
    return f"RETURNING {column(TaskEvent, 'id')} AS id, {column(TaskEvent, 'sequence')} AS sequence"


@lru_cache(maxsize=256)
def insert_all_sql(shape: tuple[tuple[type[Model], int], ...], following: str) -> str:
    """One statement inserting groups of rows of these models and sizes, in order, the last
    (the events) a part named NEW_EVENTS that the parts `following` use."""
    parts = [insert_sql(model, count) for model, count in shape]
    named = [f"w{i} AS ({part})" for i, part in enumerate(parts[:-1])]
    named.append(f"{NEW_EVENTS} AS ({parts[-1]} {returned_events()})")
    return "WITH " + ", ".join([*named, *([following] if following else [])]) + " SELECT 1"


def insert_all_statement(
    groups: Sequence[Sequence[Model]], extra: Sequence[Row] = ()
) -> tuple[str, list[Any]]:
    """One statement inserting every non-empty group, the last the events, then the rows of
    `extra` (`tasks.hooks`)."""
    present = [group for group in groups if group]
    assert present and type(present[-1][0]) is TaskEvent
    params: list[Any] = []
    for group in present:
        params += row_params(group)
    following, following_params = extra_parts(extra, "")
    shape = tuple((type(group[0]), len(group)) for group in present)
    return insert_all_sql(shape, ", ".join(following)), params + following_params


# ---- The rows other apps add (`tasks.hooks`) -----------------------------------------------


def extra_parts(rows: Sequence[Row], guard: str) -> tuple[list[str], list[Any]]:
    """The `WITH` parts writing `rows` after the part NEW_EVENTS, and their parameters;
    `guard` (a `WHERE`) keeps a replaced row from being written when the change is not."""
    parts: list[str] = []
    params: list[Any] = []
    replaced: dict[type[Model], list[str]] = {}
    for index, row in enumerate(rows):
        name = f"x{index}"
        if isinstance(row, Replace):
            model = type(row.row)
            parts.append(f"{name} AS ({replace_sql(model, row.key, row.update, guard)})")
            params += row_params([row.row])
            replaced.setdefault(model, []).append(name)
        else:
            part, part_params = per_event_sql(row, replaced.get(row.source, []))
            parts.append(f"{name} AS ({part})")
            params += part_params
    return parts, params


@lru_cache(maxsize=64)
def replace_sql(
    model: type[Model], key: tuple[str, ...], update: tuple[str, ...], guard: str
) -> str:
    sets = ", ".join(f"{column(model, n)} = EXCLUDED.{column(model, n)}" for n in update)
    insert = insert_select_sql(model, 1, "SELECT {columns} FROM {values}" + guard)
    return f"{insert} ON CONFLICT ({columns(model, key)}) DO UPDATE SET {sets} RETURNING *"


def cast(model: type[Model], name: str) -> str:
    return f"%s::{field(model, name).db_type(builder())}"


def per_event_sql(row: PerEvent, replaced: list[str]) -> tuple[str, list[Any]]:
    """`INSERT ... SELECT` of one row per new event and matching source row (`k`): the
    source's stored rows, those replaced by this statement read from its parts instead."""
    params = []
    for f in inserted_fields(row.model):
        value = row.values.get(f.name, MISSING)
        if not (isinstance(value, OfEvent | OfSource) or generated(f, value)):
            params.append(parameter(f)(f.get_default() if value is MISSING else value))
    where_params = [parameter(field(row.source, n))(v) for n, v in row.where.items()]
    params += where_params * (1 + len(replaced))
    # The text depends only on where each value comes from (None: a constant, a parameter):
    # built once per shape.
    taken = tuple(
        (n, v if isinstance(v, OfEvent | OfSource) else None) for n, v in row.values.items()
    )
    text = per_event_text(row.model, row.source, taken, tuple(row.where), tuple(replaced))
    return text, params


def generated(f: Field, value: Any) -> bool:
    return value is MISSING and f.primary_key and f.default is uuid.uuid4


@lru_cache(maxsize=64)
def per_event_text(
    model: type[Model],
    source: type[Model],
    taken: tuple[tuple[str, OfEvent | OfSource | None], ...],
    where_names: tuple[str, ...],
    replaced: tuple[str, ...],
) -> str:
    values = dict(taken)
    selected = []
    for f in inserted_fields(model):
        value = values.get(f.name, MISSING)
        if isinstance(value, OfEvent):
            selected.append(f"e.{value.name}")
        elif isinstance(value, OfSource):
            selected.append(f"k.{column(source, value.name)}")
        elif generated(f, value):
            selected.append("gen_random_uuid()")
        else:
            selected.append(cast(model, f.name))
    where = [f"{column(source, n)} = {cast(source, n)}" for n in where_names]
    key = column(source, source._meta.pk.name)  # type: ignore[union-attr]
    stored = f"SELECT * FROM {table(source)} WHERE " + " AND ".join(["TRUE", *where])
    for name in replaced:
        stored += f" AND {key} NOT IN (SELECT {key} FROM {name})"
    sources = [stored]
    for name in replaced:
        sources.append(f"SELECT * FROM {name} WHERE " + " AND ".join(["TRUE", *where]))
    names = inserted_names(model)
    return (
        f"INSERT INTO {table(model)} ({columns(model, names)}) SELECT {', '.join(selected)}"
        f" FROM ({' UNION ALL '.join(sources)}) k CROSS JOIN {NEW_EVENTS} e"
    )


MISSING = object()


# ---- A batch of changes to a stored task ------------------------------------------------------

# The Task fields every change of state sets; `status` adds the status fields to them.
UPDATED = ("state", "updated_at", "heartbeat_at")
STATUS_FIELDS = ("status_message", "status_timestamp")


def update_params(
    task_id: Any,
    states: Sequence[str],
    owner: str | None,
    values: dict[str, Any],
    new_events: int,
    sequence: int | None = None,
) -> tuple[tuple[str, ...], list[Any]]:
    """The fields the UPDATE sets (part of the key of its statement) and its parameters."""
    params = [task_parameter(name)(value) for name, value in values.items()]
    params += [new_events, task_key(task_id), *states]
    if owner is not None:
        params.append(owner)
    if sequence is not None:
        params.append(sequence)
    return tuple(values), params


@lru_cache(maxsize=64)
def update_sql(
    names: tuple[str, ...], states: int, by_owner: bool, without_push: bool, by_sequence: bool
) -> str:
    """`UPDATE` of the task's fields `names` and its event count, if it is in one of the
    expected states (and has that owner; and, `without_push`, has no webhooks; and,
    `by_sequence`, has that event count), returning its new event count and whether it has
    webhooks."""
    sets = ", ".join(f"{column(Task, name)} = %s" for name in names)
    sequence = column(Task, "last_sequence")
    statement = (
        f"UPDATE {table(Task)} SET {sets}, {sequence} = {sequence} + %s "
        f"WHERE {column(Task, 'id')} = %s "
        f"AND {column(Task, 'state')} IN ({', '.join(['%s'] * states)})"
    )
    if by_owner:
        statement += f" AND {column(Task, 'owner')} = %s"
    if without_push:
        statement += f" AND NOT {column(Task, 'push_enabled')}"
    if by_sequence:
        statement += f" AND {sequence} = %s"
    return statement + f" RETURNING {columns(Task, ('last_sequence', 'push_enabled'))}"


@dataclass
class Change:
    """A batch of changes to a stored task, as `changes.Plan` collects it, and its guard."""

    task_id: Any
    states: tuple[str, ...]  # the task must be in one of these
    values: dict[str, Any]  # the Task fields set
    messages: Sequence[Model]
    artifacts: Sequence[Model]
    updated_artifacts: Sequence[Model]
    events: Sequence[Model]
    extra: Sequence[Row] = ()
    owner: str | None = None  # the task must have this owner
    without_push: bool = False  # refused if the task has webhooks
    sequence: int | None = None  # the task's last event must be this one (a retry)


def change_statement(change: Change) -> tuple[str, list[Any]]:
    """One statement applying a batch of changes to a task (PostgreSQL).

    The conditional UPDATE comes first; every other part reads its result, so a task that
    moved on (or got a webhook meanwhile, `without_push`) gets nothing written. Events are
    numbered after the UPDATE's new `last_sequence`. The statement returns that number and
    whether the task has webhooks, or no row when refused. The events' `sequence` must be
    1..n, in order.
    """
    groups = (change.messages, change.artifacts, change.events)
    names, params = update_params(
        change.task_id, change.states, change.owner, change.values, len(change.events),
        change.sequence,
    )  # fmt: skip
    for group in groups[:2]:
        if group:
            params += row_params(group)
    statement = partial(
        change_sql, names, len(change.states), change.owner is not None, change.without_push,
        change.sequence is not None, *(len(group) for group in groups),
        len(change.updated_artifacts),
    )  # fmt: skip
    if change.updated_artifacts:
        params += row_params(change.updated_artifacts, ARTIFACT_UPDATED)
        params.append(task_key(change.task_id))
    if change.events:
        params += row_params(change.events)
    following, following_params = extra_parts(change.extra, " WHERE EXISTS (SELECT 1 FROM u)")
    return statement(", ".join(following)), params + following_params


ARTIFACT_UPDATED = ("artifact_id", "parts", "name", "updated_at")


@lru_cache(maxsize=256)
def change_sql(
    names: tuple[str, ...],
    states: int,
    by_owner: bool,
    without_push: bool,
    by_sequence: bool,
    messages: int,
    artifacts: int,
    events: int,
    updated: int,
    following: str,
) -> str:
    """`change_statement`'s SQL for a batch of this shape, the parts `following` (rows
    other apps add) after the events."""
    sequence = column(Task, "last_sequence")
    parts = [f"u AS ({update_sql(names, states, by_owner, without_push, by_sequence)})"]
    if_updated = "SELECT v.* FROM {values} WHERE EXISTS (SELECT 1 FROM u)"
    for name, model, count in (("m", Message, messages), ("a", Artifact, artifacts)):
        if count:
            parts.append(f"{name} AS ({insert_select_sql(model, count, if_updated)})")
    if updated:
        casts = ", ".join(cast(Artifact, n) for n in ARTIFACT_UPDATED)
        values = ", ".join([f"({casts})"] * updated)
        sets = ", ".join(
            f"{column(Artifact, n)} = v.{column(Artifact, n)}" for n in ARTIFACT_UPDATED[1:]
        )
        key = column(Artifact, "artifact_id")
        parts.append(
            f"au AS (UPDATE {table(Artifact)} t SET {sets} FROM (VALUES {values})"
            f" AS v({columns(Artifact, ARTIFACT_UPDATED)})"
            f" WHERE t.{column(Artifact, 'task')} = %s AND t.{key} = v.{key}"
            f" AND EXISTS (SELECT 1 FROM u))"
        )
    if events:
        numbered = f"u.{sequence} - {events} + v.{column(TaskEvent, 'sequence')}"
        select = "SELECT {columns} FROM u, {values}"
        insert = insert_select_sql(TaskEvent, events, select, (("sequence", numbered),))
        parts.append(f"{NEW_EVENTS} AS ({insert} {returned_events()})")
    if following:
        parts.append(following)
    returning = f"u.{sequence}, u.{column(Task, 'push_enabled')}"
    return "WITH " + ", ".join(parts) + f" SELECT {returning} FROM u"


def insert_select_sql(
    model: type[Model], count: int, select: str, replace: tuple[tuple[str, str], ...] = ()
) -> str:
    """`INSERT ... SELECT` of `count` rows given as a VALUES list named `v`, typed by explicit
    casts (a bare parameter in VALUES has no column to take its type from). `select` names the
    VALUES list `{values}` and its columns `{columns}`; `replace` puts an expression in place
    of a field's value."""
    names = inserted_names(model)
    quoted = columns(model, names)
    row = "(" + ", ".join(f"%s::{f.db_type(builder())}" for f in inserted_fields(model)) + ")"
    values = f"(VALUES {', '.join([row] * count)}) AS v({quoted})"
    expressions = dict(replace)
    selected = ", ".join(expressions.get(n, f"v.{column(model, n)}") for n in names)
    return f"INSERT INTO {table(model)} ({quoted}) " + select.format(
        values=values, columns=selected
    )


def fetch_all(statement: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        return rows_of(cursor, statement, params)


def rows_of(cursor: Any, statement: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The rows a statement returns on `cursor` (none for one that returns no rows)."""
    cursor.execute(statement, params)
    return [tuple(row) for row in cursor.fetchall()] if cursor.description else []


# ---- The claim of a stored task -------------------------------------------------------------

CLAIMED_COLUMNS = (
    "agent_id", "owner", "context_id", "protocol_version", "execution_mode", "metadata",
    "state", "push_enabled", "last_sequence",
)  # fmt: skip
MESSAGE_COLUMNS = (
    "message_id", "context_id", "role", "parts", "reference_task_ids", "extensions", "metadata",
)  # fmt: skip
CLAIMED_STATES = tuple(sorted(ACTIVE_STATES))


@cache
def claim_sql() -> str:
    """The conditional UPDATE by which one job claims a stored task (only the job holding the
    task's token may), returning what the turn needs of the task (`CLAIMED_COLUMNS`)."""
    runner = column(Task, "runner")
    states = ", ".join(["%s"] * len(CLAIMED_STATES))
    return (
        f"UPDATE {table(Task)} SET {runner} = %s, {column(Task, 'heartbeat_at')} = %s "
        f"WHERE {column(Task, 'id')} = %s AND {runner} = %s "
        f"AND {column(Task, 'state')} IN ({states}) "
        f"RETURNING {columns(Task, CLAIMED_COLUMNS)}"
    )


@cache
def claim_with_messages_sql() -> str:
    """The claim and, in the same statement, the task's messages in order (PostgreSQL)."""
    return (
        f"WITH c AS ({claim_sql()}) SELECT c.*, {columns(Message, MESSAGE_COLUMNS, 'm.')} "
        f"FROM c LEFT JOIN {table(Message)} m ON m.{column(Message, 'task')} = %s "
        f"ORDER BY m.{column(Message, 'position')}"
    )


@cache
def messages_sql() -> str:
    return (
        f"SELECT {columns(Message, MESSAGE_COLUMNS, 'm.')} FROM {table(Message)} m "
        f"WHERE m.{column(Message, 'task')} = %s ORDER BY m.{column(Message, 'position')}"
    )


def claim_task(task_id: Any, token: str, runner: str, now: Any) -> Claimed | None:
    """Claim a stored task (`claim_sql`) and read its messages, in order: one statement on
    PostgreSQL, two elsewhere. None when another job has it or it is over."""
    key = task_key(task_id)
    params = [runner, task_parameter("heartbeat_at")(now), key, token, *CLAIMED_STATES]
    if builder().vendor == "postgresql":
        rows = fetch_all(claim_with_messages_sql(), [*params, key])
        if not rows:
            return None
        width = len(CLAIMED_COLUMNS)
        task_row, message_rows = rows[0][:width], [r[width:] for r in rows if r[width] is not None]
    else:
        rows = fetch_all(claim_sql(), params)
        if not rows:
            return None
        task_row, message_rows = rows[0], fetch_all(messages_sql(), [key])
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


@lru_cache(maxsize=16)
def readers(model: type[Model], names: tuple[str, ...]) -> list[Callable[..., Any] | None]:
    return [getattr(field(model, name), "from_db_value", None) for name in names]


def converted(model: type[Model], names: tuple[str, ...], values: Sequence[Any]) -> dict[str, Any]:
    """Raw column values as the model's fields hold them (JSON decoded, say)."""
    return {
        name: value if read is None else read(value, None, builder())
        for name, read, value in zip(names, readers(model, names), values, strict=True)
    }


# The fields the statements here name besides the inserted ones (`tasks.checks` makes sure
# each still exists, so a rename fails start-up rather than the first write).
NAMED: dict[type[Model], tuple[str, ...]] = {
    Task: (
        *UPDATED, *STATUS_FIELDS, "id", "last_sequence", "push_enabled", "runner",
        *CLAIMED_COLUMNS,
    ),
    Message: (*MESSAGE_COLUMNS, "task", "position"),
    TaskEvent: ("sequence",),
}  # fmt: skip
