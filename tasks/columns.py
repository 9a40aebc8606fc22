"""Table and column names for the raw SQL of `tasks.sql`, taken from the models' `_meta`.

A renamed table or a field's `db_column` changes the statements with the model. Each name
is looked up and quoted once: the statements are built on hot paths.
"""

from __future__ import annotations

from functools import cache
from typing import cast

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model


@cache
def builder() -> BaseDatabaseWrapper:
    """A connection object that is never connected, only asked to quote names and prepare
    values. Through the `connection` proxy each of those reads is a context-local lookup, and
    under ASGI each request's context would build a connection object of its own."""
    return connections.create_connection(DEFAULT_DB_ALIAS)


def field(model: type[Model], name: str) -> Field:
    """The model's concrete field `name` (its attname, `agent_id`, works too)."""
    return cast(Field, model._meta.get_field(name))


@cache
def table(model: type[Model]) -> str:
    return builder().ops.quote_name(model._meta.db_table)


@cache
def column(model: type[Model], name: str) -> str:
    return builder().ops.quote_name(field(model, name).column)


def columns(model: type[Model], names: tuple[str, ...], prefix: str = "") -> str:
    """The quoted columns of the fields `names`, comma-separated, each after `prefix`."""
    return ", ".join(prefix + column(model, name) for name in names)
