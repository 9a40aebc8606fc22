"""Template tags of the console: the dashboard on the admin's home page, its charts, and
links to pages of other apps."""

from __future__ import annotations

import time
from typing import Any

from django import template
from django.utils.safestring import SafeString

from console import charts, links, live_pages, task_view
from console.dashboard import Dashboard, MinuteBar
from tasks.models import Task

register = template.Library()


@register.inclusion_tag("console/dashboard.html")
def console_dashboard() -> dict[str, Any]:
    return live_pages.dashboard_context()


@register.simple_tag
def task_summary(task: Task) -> SafeString:
    """The line over a task's fields: state, duration, progress (refreshed live)."""
    return SafeString(task_view.summary_html(task))


@register.simple_tag
def minute_chart(bars: list[MinuteBar], maximum: int, label: str, what: str) -> SafeString:
    return charts.minute_bars(bars, maximum, label, what)


@register.filter
def chat_url(slug: str) -> str:
    return links.chat_url(slug)


@register.simple_tag
def developer_pages_url() -> str:
    return links.developer_pages_url()


@register.filter
def since(unix_time: float) -> str:
    """How long ago a Unix time was, in the largest unit that fits."""
    seconds = max(0, int(time.time() - unix_time))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"


@register.filter
def capped(count: int, board: Dashboard) -> str:
    """A capped count as the operator reads it: "10,000+" at the cap."""
    return f"{count:,}+" if count >= board.count_cap else f"{count:,}"
