"""Strings JSON can spell but the hub cannot carry, found before anything reads the request.

A lone UTF-16 surrogate (`"\\ud800"` is legal JSON text) is no Unicode character: no UTF-8
answer, protobuf message or database can hold it, so it is an invalid request (in `id` or
`method`) or invalid params. U+0000 is Unicode, but PostgreSQL's text and jsonb cannot store
it; params holding it are refused with -32602 on every backend alike (SQLite could store
it), so a request gets the same answer whichever database the hub runs on.
"""

from __future__ import annotations

import json
import re
from typing import Any

from a2ahub.errors import InvalidParamsError, invalid_params

# The body is strict UTF-8 and JSON allows no raw control character in a string, so both can
# only arrive as \u escapes: this scan (at C speed) tells when a walk of the request is needed.
SUSPECT_ESCAPE = re.compile(rb"\\u(?:[dD][89abcdefABCDEF]|0000)")
# A surrogate left in a decoded string is a lone one: json pairs the rest into one character.
SURROGATE = re.compile("[\ud800-\udfff]")
UNCARRIABLE = re.compile("[\x00\ud800-\udfff]")
PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

NUL = "U+0000 (NUL), which the hub cannot store"
LONE_SURROGATE = "a lone UTF-16 surrogate, which is not Unicode"


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


def first_uncarriable(value: Any) -> tuple[str, str, bool] | None:
    """(JSON path, offending text, whether it is a member's name) of the first string, in
    document order, that the hub cannot carry. A walk with its own stack: no nesting that
    json accepted can overflow it."""
    pending: list[tuple[str, Any]] = [("", value)]
    while pending:
        path, item = pending.pop()
        if isinstance(item, str):
            if UNCARRIABLE.search(item):
                return path, item, False
        elif isinstance(item, dict):
            for key in item:
                if UNCARRIABLE.search(key):
                    return member(path, key), key, True
            pending.extend((member(path, k), v) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            pending.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(item))))
    return None


def member(path: str, key: str) -> str:
    """`a.b` for a plain name, else the name as an ASCII JSON string: `a["k\\u0000"]`."""
    if PLAIN_KEY.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def refusal(path: str, text: str, is_name: bool) -> InvalidParamsError:
    what = NUL if "\x00" in text else LONE_SURROGATE
    return invalid_params(path, f"{'its name holds' if is_name else 'holds'} {what}")
