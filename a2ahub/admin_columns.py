"""Columns of the admin's lists that keep a table within the screen: a long value (an error, a
URL, a list of users) is shown on one line, cut with an ellipsis by the stylesheet
(`.shortened` in static/hub/admin.css), and whole in its title for the pointer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.utils.html import format_html
from django.utils.safestring import SafeString

EMPTY = "—"


def shortened(value: Any, code: bool = False) -> SafeString | str:
    """`value` as one line the stylesheet may cut, its whole text in the title."""
    text = " ".join(str(value or "").split())
    if not text:
        return EMPTY
    tag = "code" if code else "span"
    return format_html('<{} class="shortened" title="{}">{}</{}>', tag, text, text, tag)


def shorten(
    field: str, description: str | None = None, ordering: str | None = None, code: bool = False
) -> Callable[[Any], SafeString | str]:
    """A list column showing the model's `field` shortened: `list_display = [shorten("url")]`.
    Its header, CSS class and sorting are the field's, as the plain column's were."""

    def column(row: Any) -> SafeString | str:
        return shortened(getattr(row, field), code=code)

    column.__name__ = field
    label = description or field.replace("_", " ")
    return admin.display(description=label, ordering=ordering or field)(column)
