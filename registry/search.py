"""Finding live registrations: `q` (name, description, skills), `tag`, `skill`, `category`,
`protocol`, in pages of agent ids with an opaque cursor (the last id of the page)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping

from django.db.models import Q, QuerySet
from django.utils import timezone

from a2ahub import numerals
from registry.errors import ApiError
from registry.models import Registration

DEFAULT_PAGE, MAX_PAGE = 20, 100


def live() -> QuerySet[Registration]:
    return Registration.objects.filter(
        expires_at__gt=timezone.now(), agent__enabled=True, agent__public=True
    ).select_related("agent")


def matching(params: Mapping[str, str]) -> QuerySet[Registration]:
    found = live()
    if q := params.get("q", "").strip():
        found = found.filter(
            Q(agent__name__icontains=q) | Q(agent__description__icontains=q)
            | Q(skill_index__icontains=q) | Q(tag_index__icontains=q)
        )  # fmt: skip
    if tag := params.get("tag", "").strip().lower():
        found = found.filter(tag_index__contains=f"|{tag}|")
    if skill := params.get("skill", "").strip().lower():
        found = found.filter(skill_index__contains=f"|{skill}|")
    if category := params.get("category", "").strip():
        found = found.filter(category__iexact=category)
    if protocol := params.get("protocol", "").strip().lower():
        found = found.filter(protocol_index__contains=f"|{protocol.removeprefix('a2a-')}|")
    return found


def page(params: Mapping[str, str]) -> tuple[list[Registration], str]:
    """One page of matches in agent-id order, and the cursor of the next ("" when none)."""
    size = page_size(params.get("pageSize", ""))
    found = matching(params).order_by("agent__slug")
    if cursor := params.get("cursor", ""):
        found = found.filter(agent__slug__gt=decode_cursor(cursor))
    rows = list(found[: size + 1])
    more = len(rows) > size
    rows = rows[:size]
    return rows, encode_cursor(rows[-1].agent.slug) if more else ""


def page_size(raw: str) -> int:
    if not raw:
        return DEFAULT_PAGE
    size = numerals.whole_number(raw, MAX_PAGE)
    if not size:
        raise ApiError(400, f"pageSize must be a whole number from 1 to {MAX_PAGE}.", "pageSize")
    return size


def encode_cursor(slug: str) -> str:
    return base64.urlsafe_b64encode(slug.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        slug = base64.b64decode(padded, altchars=b"-_", validate=True).decode()
        if slug and "\x00" not in slug:
            return slug
    except (binascii.Error, UnicodeDecodeError, ValueError):
        pass
    raise ApiError(400, "cursor is not one this API gave out.", "cursor")
