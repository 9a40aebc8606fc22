"""Charts drawn on the server as inline SVG: no script and no outside request is needed to
read them, and a live refresh swaps them like any other HTML."""

from __future__ import annotations

from collections.abc import Sequence

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from console.dashboard import MinuteBar

BAR_WIDTH = 6
BAR_STEP = 7
HEIGHT = 80


def minute_bars(bars: Sequence[MinuteBar], maximum: int, label: str, what: str) -> SafeString:
    """One bar per minute, oldest first; a bar's lower part counts `ok`, its upper `other`
    (finished tasks: completed below, failed, canceled or rejected above). Each bar's title
    says its minute and numbers."""
    rects = []
    for i, bar in enumerate(bars):
        ok = round(bar.ok / maximum * HEIGHT) if maximum else 0
        other = round(bar.other / maximum * HEIGHT) if maximum else 0
        x = i * BAR_STEP
        title = f"{bar.minute:%H:%M} UTC: {bar.ok} {what}" + (
            f", {bar.other} not completed" if bar.other else ""
        )
        rects.append((x, HEIGHT - ok, BAR_WIDTH, max(ok, 1 if bar.ok else 0), "ok", title))
        if other:
            rects.append((x, HEIGHT - ok - other, BAR_WIDTH, other, "other", title))
    body = format_html_join(
        "", '<rect x="{}" y="{}" width="{}" height="{}" class="{}"><title>{}</title></rect>', rects
    )
    width = len(bars) * BAR_STEP
    return format_html(
        '<svg class="console-chart" viewBox="0 0 {} {}" preserveAspectRatio="none" role="img" '
        'aria-label="{}"><line x1="0" y1="{}" x2="{}" y2="{}" class="axis"></line>{}</svg>',
        width, HEIGHT + 1, label, HEIGHT + 0.5, width, HEIGHT + 0.5, body,
    )  # fmt: skip
