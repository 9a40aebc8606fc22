"""Admin lists that stay fast however big their table: a paginator that counts no further than
`tasks.retention.COUNT_LIMIT` rows and says so on the page ("10,000+ tasks"), a filter whose
choices are the protocol versions rather than a DISTINCT over every row, and the search of ids
by their first characters as a range of the index rather than a substring scan."""

from __future__ import annotations

import re
import uuid
from typing import Any

from django.contrib import admin
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.functional import cached_property

from tasks import retention
from tasks.wire import V01, V03, V1

HEX_PREFIX = re.compile(r"^[0-9a-f]{1,32}$")


class AtLeast(int):
    """A count that stopped at its cap: it compares and pages as the number counted, and
    reads as "10,000+" wherever the admin prints it (the pagination line, the search's
    result count, "select all")."""

    def __str__(self) -> str:
        return f"{retention.COUNT_LIMIT:,}+"


class CappedPaginator(Paginator):
    """The pages reach as far as the count does: past the cap, filters and search narrow the
    list down."""

    @cached_property
    def count(self) -> int:
        rows = self.object_list
        return capped_count(rows) if isinstance(rows, QuerySet) else len(rows)


def capped_count(rows: QuerySet) -> int:
    """How many rows, or `AtLeast` the cap when there are more."""
    counted = retention.count_capped(rows)
    return AtLeast(counted) if counted > retention.COUNT_LIMIT else counted


class BigListAdmin(admin.ModelAdmin):
    """An admin list that stays fast however big its table: a count that stops at 10,000
    ("10,000+"), none of the whole table and none per filter choice (each would be a count of
    its own)."""

    paginator = CappedPaginator
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER


class ProtocolVersionFilter(admin.SimpleListFilter):
    """Rows by the protocol version they were made in (`protocol_version`), the choices being
    the versions the hub speaks."""

    title = "protocol version"
    parameter_name = "protocol_version__exact"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(V1, "1.0"), (V03, "0.3"), (V01, "0.1 (pre-0.2 methods)")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        return queryset.filter(protocol_version=value) if value else queryset


def id_prefix_range(term: str) -> tuple[uuid.UUID, uuid.UUID] | None:
    """The UUIDs that begin with `term` (hex digits, dashes anywhere), as the first and last
    of one range; None when `term` cannot begin a UUID."""
    digits = term.replace("-", "").lower()
    if not HEX_PREFIX.match(digits):
        return None
    return uuid.UUID(digits.ljust(32, "0")), uuid.UUID(digits.ljust(32, "f"))
