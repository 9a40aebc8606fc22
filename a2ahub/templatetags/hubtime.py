"""The hub's time filters for every template: `{{ moment|when }}` (a relative time with the
absolute one on hover), `{{ seconds|duration }}` and `{{ value|plain }}` (a list as "a, b",
nothing as "—"). See `a2ahub.when`."""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils.safestring import SafeString

from a2ahub import when as times

register = template.Library()


@register.filter
def when(moment: datetime | None) -> SafeString:
    return times.time_html(moment)


@register.filter
def duration(seconds: float | None) -> str:
    return times.EMPTY if seconds is None else times.duration(float(seconds))


register.filter("plain", times.plain)
