"""Times as the hub's pages write them: one absolute format to the second, relative times
("3 s ago") with the absolute one on hover, and durations ("12 s", "2 min 5 s")."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone
from django.utils.dateformat import format as format_date
from django.utils.html import format_html
from django.utils.safestring import SafeString

EMPTY = "—"  # the one mark for "no value" across the hub
ABSOLUTE = "Y-m-d H:i:s"


def absolute(moment: datetime) -> str:
    """ "2026-11-27 01:54:07", in the hub's time zone (UTC)."""
    return format_date(timezone.localtime(moment), ABSOLUTE)


def duration(seconds: float) -> str:
    """A length of time in the two largest units that matter: "0.4 s", "12 s", "2 min 5 s"."""
    seconds = max(0.0, seconds)
    if seconds < 10:
        return f"{seconds:.1f} s".replace(".0 s", " s")
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min" + (f" {whole % 60} s" if whole % 60 else "")
    if whole < 86400:
        return f"{whole // 3600} h" + (f" {whole % 3600 // 60} min" if whole % 3600 >= 60 else "")
    return f"{whole // 86400} d" + (f" {whole % 86400 // 3600} h" if whole % 86400 >= 3600 else "")


def ago(moment: datetime, now: datetime | None = None) -> str:
    """ "3 s ago" ("in 3 s" for a time to come): the words the pages' script keeps current."""
    seconds = ((now or timezone.now()) - moment).total_seconds()
    if abs(seconds) < 1:
        return "just now"
    length = duration(abs(seconds)) if abs(seconds) >= 60 else f"{int(abs(seconds))} s"
    return f"{length} ago" if seconds > 0 else f"in {length}"


def plain(value: Any) -> str:
    """A stored value as people read it: a list as "a, b", nothing as the empty mark."""
    if value is None or value == "" or value == [] or value == {}:
        return EMPTY
    if isinstance(value, list | tuple):
        return ", ".join(plain(item) for item in value)
    if isinstance(value, dict):
        return "; ".join(f"{key}: {plain(item)}" for key, item in value.items())
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def time_html(moment: datetime | None, now: datetime | None = None) -> SafeString:
    """A relative time in a `<time>` element with the absolute one on hover; the pages'
    script (static/hub/when.js) keeps the words current. No time: the empty mark."""
    if moment is None:
        return format_html("{}", EMPTY)
    return format_html(
        '<time class="hub-when" datetime="{}" title="{} UTC">{}</time>',
        moment.isoformat(), absolute(moment), ago(moment, now),
    )  # fmt: skip
