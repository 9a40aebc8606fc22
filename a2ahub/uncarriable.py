"""Strings JSON can spell but the hub cannot carry: a lone UTF-16 surrogate (no Unicode
character: no UTF-8 answer, protobuf message or database holds it) and U+0000 (PostgreSQL's
text and jsonb cannot store it; SQLite could, so refusing it everywhere gives the same answer
on every backend). Each API finds them in what it read and refuses them in its own words."""

from __future__ import annotations

import json
import re
from typing import Any

UNCARRIABLE = re.compile("[\x00\ud800-\udfff]")
PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

NUL = "U+0000 (NUL), which the hub cannot store"
LONE_SURROGATE = "a lone UTF-16 surrogate, which is not Unicode"


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
                if isinstance(key, str) and UNCARRIABLE.search(key):
                    return member(path, key), key, True
            pending.extend((member(path, str(k)), v) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            pending.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(item))))
    return None


def member(path: str, key: str) -> str:
    """`a.b` for a plain name, else the name as an ASCII JSON string: `a["k\\u0000"]`."""
    if PLAIN_KEY.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def problem(text: str, is_name: bool) -> str:
    """What is wrong, as the end of a sentence: "holds U+0000 (NUL), which ..."."""
    what = NUL if "\x00" in text else LONE_SURROGATE
    return f"{'its name holds' if is_name else 'holds'} {what}"
