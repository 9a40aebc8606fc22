"""Strings JSON can spell but the hub cannot carry, found before anything reads the request.

A lone UTF-16 surrogate (`"\\ud800"` is legal JSON text) is no Unicode character: no UTF-8
answer, protobuf message or database can hold it, so it is an invalid request (in `id` or
`method`) or invalid params. U+0000 is Unicode, but PostgreSQL's text and jsonb cannot store
it; params holding it are refused with -32602 on every backend alike (SQLite could store
it), so a request gets the same answer whichever database the hub runs on.
"""

from __future__ import annotations

import re
from typing import Any

from a2ahub.errors import InvalidParamsError, invalid_params
from a2ahub.uncarriable import LONE_SURROGATE, NUL, first_uncarriable, problem

__all__ = ["LONE_SURROGATE", "NUL", "check_params", "is_unicode", "may_hold_uncarriable"]

# The body is strict UTF-8 and JSON allows no raw control character in a string, so both can
# only arrive as \u escapes: this scan (at C speed) tells when a walk of the request is needed.
SUSPECT_ESCAPE = re.compile(rb"\\u(?:[dD][89abcdefABCDEF]|0000)")
# A surrogate left in a decoded string is a lone one: json pairs the rest into one character.
SURROGATE = re.compile("[\ud800-\udfff]")


def may_hold_uncarriable(body: bytes) -> bool:
    # Most bodies hold no backslash at all, which one memchr settles.
    return b"\\" in body and SUSPECT_ESCAPE.search(body) is not None


def is_unicode(text: str) -> bool:
    """False when `text` holds a lone surrogate (`isascii` is a flag check: no scan)."""
    return text.isascii() or SURROGATE.search(text) is None


def check_params(params: dict[str, Any]) -> None:
    """Refuse params holding a string the hub cannot carry, naming its field."""
    found = first_uncarriable(params)
    if found is not None:
        raise refusal(*found)


def refusal(path: str, text: str, is_name: bool) -> InvalidParamsError:
    return invalid_params(path, problem(text, is_name))
