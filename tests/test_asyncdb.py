"""The event loop's own PostgreSQL connections (asyncpg): JSON goes in and comes back as it
was, and they connect as Django's connections do, or refuse an option they cannot honour."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from psycopg.types.json import Jsonb

from a2ahub import asyncdb
from tests.helpers import postgresql_only

on_postgresql = postgresql_only("the loop's connections are PostgreSQL's")

VALUES: list[Any] = [
    {"task": {"id": "t-1", "history": [{"parts": [{"text": "héllo ✓"}]}]}},
    [1, 2.5, None, True, "x"],
    {"big": 2**40, "nested": {"empty": {}, "list": []}},
]


@on_postgresql
@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("value", VALUES)
async def test_json_sent_from_the_loop_comes_back_as_it_was(value: Any) -> None:
    try:
        rows = await asyncdb.execute("SELECT %s::jsonb, %s::integer", [Jsonb(value), 7], fetch=True)
    finally:
        await asyncdb.close()

    assert rows == [(value, 7)]


def test_the_loop_connects_with_django_s_connection_parameters() -> None:
    params = {
        "dbname": "hub", "host": "db.internal", "port": 5433, "user": "hub", "password": "pw",
        "sslmode": "require", "application_name": "a2a-hub", "connect_timeout": "5",
        "client_encoding": "UTF8", "prepare_threshold": None,
    }  # fmt: skip

    assert asyncdb.asyncpg_kwargs(params) == {
        "database": "hub", "host": "db.internal", "port": 5433, "user": "hub", "password": "pw",
        "ssl": "require", "timeout": 5.0, "server_settings": {"application_name": "a2a-hub"},
    }  # fmt: skip


def test_an_option_the_loop_cannot_honour_stops_it_with_a_message_naming_it() -> None:
    with pytest.raises(ImproperlyConfigured, match="'options'"):
        asyncdb.asyncpg_kwargs({"dbname": "hub", "options": "-c search_path=a2a"})
