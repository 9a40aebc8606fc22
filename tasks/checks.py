"""A system check that the task models still fit the raw SQL of `tasks.sql`.

Those statements insert every column of a task's rows with values converted there rather
than by Django's `save()`, and set or read some task columns by name: a model that gains what
they do not do (a database default, an automatic timestamp, a kind of field with its own
conversion) would be written wrong without a word. Start-up fails instead, naming the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.apps import AppConfig
from django.core import checks
from django.core.exceptions import FieldDoesNotExist
from django.db.models import Field, Model
from django.db.models.fields import NOT_PROVIDED

# What the check refuses, by id. The message follows the field (or model) it is about.
MESSAGES = {
    "tasks.E001": "A db_default without a default is never applied by tasks.sql: its raw INSERT "
    "lists every column, with the value the model gives it.",
    "tasks.E002": "auto_now and auto_now_add are applied by save() alone; tasks.sql's "
    "statements would not set this column.",
    "tasks.E003": "tasks.sql has no conversion for the values of a {kind} (a field class of "
    "its own, or JSON with an encoder).",
    "tasks.E004": "A model that inherits from a concrete model has rows in two tables; "
    "tasks.sql inserts into one.",
    "tasks.E005": "NOT NULL without a default, and the raw INSERT of tasks.sql does not list it.",
    "tasks.E006": "tasks.sql's statements name the field '{name}', which is no column of this "
    "model.",
}
HINT = "Teach tasks/sql.py to write it (and tasks/checks.py to allow it), or keep the field plain."


def register() -> None:
    checks.register(raw_sql_fits_models, checks.Tags.models)


def raw_sql_fits_models(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    from tasks import sql

    if app_configs is not None and not any(config.name == "tasks" for config in app_configs):
        return []
    errors: list[checks.CheckMessage] = []
    for model in sql.INSERTED:
        errors += model_problems(model)
    return errors + missing_fields(sql.NAMED)


def error(code: str, obj: Any, **details: str) -> checks.Error:
    return checks.Error(MESSAGES[code].format(**details), hint=HINT, obj=obj, id=code)


def model_problems(model: type[Model]) -> list[checks.CheckMessage]:
    """What the raw INSERT of every column of `model`'s rows would get wrong."""
    from tasks import sql

    if model._meta.parents:
        return [error("tasks.E004", model)]
    inserted = sql.inserted_fields(model)
    errors: list[checks.CheckMessage] = []
    for field in model._meta.concrete_fields:
        errors += field_problems(field, field in inserted)
    return errors


def field_problems(field: Field, inserted: bool) -> list[checks.CheckMessage]:
    from tasks import sql

    errors: list[checks.CheckMessage] = []
    # With a default too, a new row's value is the model's: the database's default is only
    # for the INSERTs of a release that does not know the column (a rolling deploy).
    if field.db_default is not NOT_PROVIDED and not field.has_default():
        errors.append(error("tasks.E001", field))
    if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
        errors.append(error("tasks.E002", field))
    if inserted and sql.converter(field) is None:
        errors.append(error("tasks.E003", field, kind=type(field).__name__))
    if not inserted and not (field.null or field.has_default() or sql.is_automatic_key(field)):
        errors.append(error("tasks.E005", field))
    return errors


def missing_fields(named: Mapping[type[Model], Iterable[str]]) -> list[checks.CheckMessage]:
    """The fields the statements name that are no longer columns of their model."""
    errors: list[checks.CheckMessage] = []
    for model, names in named.items():
        for name in names:
            try:
                found = model._meta.get_field(name)
            except FieldDoesNotExist:
                found = None
            if not getattr(found, "concrete", False):
                errors.append(error("tasks.E006", model, name=name))
    return errors
