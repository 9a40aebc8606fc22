"""How deeply the JSON the hub accepts may nest: at most MAX_DEPTH objects and arrays one
inside another, at every entrance (the A2A doors of both bindings, the registry, the
operators' API, cards read from a URL).

Deeper documents are refused with a precise error naming the limit rather than reaching code
that recurses over them (the SDK's readers, `copy.deepcopy`, protobuf's conversions), where
Python's recursion limit would end the request with a 500. 100 is protobuf's own limit for a
message parsed from JSON, so nothing the protocol can carry is refused here.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 100


class TooDeep(ValueError):
    """A JSON document nested deeper than MAX_DEPTH."""

    def __init__(self, where: str = "The body") -> None:
        super().__init__(
            f"{where} nests objects and arrays more than {MAX_DEPTH} levels deep; "
            f"the hub accepts at most {MAX_DEPTH}."
        )


def may_be_too_deep(raw: bytes | str) -> bool:
    """Whether a document's text holds enough brackets to nest past the limit (a C-speed
    count, so shallow documents are not walked)."""
    if isinstance(raw, str):
        return raw.count("{") + raw.count("[") > MAX_DEPTH
    return raw.count(b"{") + raw.count(b"[") > MAX_DEPTH


def depth_of(value: Any, stop_past: int = MAX_DEPTH) -> int:
    """How many objects and arrays nest in `value` at most (counting stops past `stop_past`).
    A walk with its own stack: no nesting can overflow it."""
    deepest = 0
    pending: list[tuple[int, Any]] = [(1, value)]
    while pending:
        depth, item = pending.pop()
        if not isinstance(item, dict | list):
            continue
        deepest = max(deepest, depth)
        if deepest > stop_past:
            return deepest
        children = item.values() if isinstance(item, dict) else item
        pending.extend((depth + 1, child) for child in children)
    return deepest


def check(value: Any, where: str = "The body") -> None:
    """TooDeep when `value` nests past the limit."""
    if depth_of(value) > MAX_DEPTH:
        raise TooDeep(where)


def loads(raw: bytes | str, where: str = "The body") -> Any:
    """`json.loads`, refusing (TooDeep) a document nested past the limit: one so deep that
    json itself gives up, as well as one it reads. Other faults raise as json's do."""
    text = raw.decode() if isinstance(raw, bytes) else raw
    try:
        document = json.loads(text)
    except RecursionError:
        raise TooDeep(where) from None
    if may_be_too_deep(text):
        check(document, where)
    return document
