"""The stored row behind a presented credential: an API key found by its prefix, an OAuth2
access token by its checksum. One indexed read either way.

The A2A doors run on an event loop. There the read goes to the loop's asyncpg pool
(`a2ahub.asyncdb`): from async code Django's ORM hops to a thread and checks its connection
first, which cost twice the read itself, and it made a call with a credential ~2 ms of CPU
dearer than an anonymous one. The statement is the ORM's own, compiled once per shape, so both
paths read the same columns of the same tables.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from django.db.models import Q, QuerySet
from oauth2_provider.models import AccessToken

from a2ahub import asyncdb
from agents.models import ApiKey

KEY_FIELDS = ("pk", "owner_id", "name", "key_hash", "last_used_at")
TOKEN_FIELDS = ("id", "user_id", "user__is_active", "application_id", "application__name",
                "expires", "scope")  # fmt: skip


@dataclass(frozen=True)
class KeyRow:
    pk: int
    owner_id: int | None
    name: str
    key_hash: str
    last_used_at: datetime | None

    @property
    def principal(self) -> str:
        return ApiKey.principal_of(self.pk, self.owner_id)


TokenRow = dict[str, Any]


def is_api_key(raw: str) -> bool:
    return raw.startswith("a2a_")


def key_prefix(raw: str) -> str | None:
    parts = raw.split("_")
    return parts[1] if len(parts) >= 3 and parts[0] == "a2a" else None


def token_checksum(raw: str) -> str:
    # How django-oauth-toolkit stores a token's checksum (tokens themselves are kept hashed).
    return hashlib.sha256(raw.encode()).hexdigest()


def key_rows(prefix: str, agent_id: int) -> QuerySet[Any, Any]:
    """An unrevoked key with this prefix, for every agent or for this one."""
    keys = ApiKey.objects.filter(prefix=prefix, revoked_at__isnull=True)
    return keys.filter(Q(agent__isnull=True) | Q(agent_id=agent_id)).values_list(*KEY_FIELDS)[:1]


def token_rows(checksum: str) -> QuerySet[Any, Any]:
    return AccessToken.objects.filter(token_checksum=checksum).values_list(*TOKEN_FIELDS)[:1]


def query_of(raw: str, agent_id: int) -> tuple[str, list[Any]] | None:
    """Which read finds the credential, as (shape, parameters); None when it cannot be one."""
    if is_api_key(raw):
        prefix = key_prefix(raw)
        return None if prefix is None else ("key", [prefix, agent_id])
    return "token", [token_checksum(raw)]


def row_of(shape: str, values: Sequence[Any] | None) -> KeyRow | TokenRow | None:
    if values is None:
        return None
    if shape == "key":
        return KeyRow(*values)
    return dict(zip(TOKEN_FIELDS, values, strict=True))


def find(raw: str, agent_id: int) -> KeyRow | TokenRow | None:
    query = query_of(raw, agent_id)
    if query is None:
        return None
    shape, params = query
    return row_of(shape, next(iter(BUILDERS[shape](*params)), None))


async def find_async(raw: str, agent_id: int) -> KeyRow | TokenRow | None:
    """As `find`, on the event loop's pool (the caller checked `asyncdb.available()`)."""
    query = query_of(raw, agent_id)
    if query is None:
        return None
    shape, params = query
    rows = await asyncdb.execute(statement(shape), params, fetch=True)
    return row_of(shape, rows[0] if rows else None)


BUILDERS: dict[str, Callable[..., QuerySet[Any, Any]]] = {"key": key_rows, "token": token_rows}
# Values that stand for the parameters while a statement is compiled; compiling checks that
# they come out in this order, which is the order `query_of` gives them.
PLACEHOLDERS: dict[str, list[Any]] = {
    "key": ["prefix-placeholder", -7_001],
    "token": ["checksum-placeholder"],
}


@cache
def statement(shape: str) -> str:
    sql, params = BUILDERS[shape](*PLACEHOLDERS[shape]).query.sql_with_params()
    if list(params) != PLACEHOLDERS[shape]:
        raise RuntimeError(f"the {shape} lookup's parameters moved: {params!r}")
    return sql
