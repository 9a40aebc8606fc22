"""How much one request may carry besides its byte size: parts per message, nesting depth
and metadata size. Each cap is a setting, and a request past one is invalid params naming the
field and the limit, in every binding, before anything reads it into protobuf or pydantic (a
message of 200,000 small parts took 13 s to convert, holding the event loop all along).

Most requests are far below every cap, and one count of the body's brackets (at C speed)
settles it without walking them: a request nests no deeper than it has objects and arrays,
and holds no metadata larger than itself.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from a2ahub.errors import invalid_params
from a2ahub.uncarriable import member

# Where each binding keeps a request's message, and the message its parts: `message.parts`
# (1.0 and 0.3 JSON-RPC, 1.0 HTTP+JSON, pre-0.2), `request.content` (0.3 HTTP+JSON).
MESSAGE_KEYS = ("message", "request")
PARTS_KEYS = ("parts", "content")


def check(body: bytes, params: dict[str, Any]) -> None:
    """Refuse `params` (read from `body`) when it passes a cap, naming the first it passes."""
    check_parts(params)
    measure = len(body) > settings.A2A_MAX_METADATA_BYTES
    if measure or body.count(b"{") + body.count(b"[") > settings.A2A_MAX_JSON_DEPTH:
        walk(params, measure)


def check_parts(params: dict[str, Any]) -> None:
    limit = settings.A2A_MAX_MESSAGE_PARTS
    for message_key in MESSAGE_KEYS:
        message = params.get(message_key)
        if not isinstance(message, dict):
            continue
        for parts_key in PARTS_KEYS:
            parts = message.get(parts_key)
            if isinstance(parts, list) and len(parts) > limit:
                problem = f"holds {len(parts)} parts; a message may hold at most {limit}"
                raise invalid_params(f"{message_key}.{parts_key}",
                                     f"{problem} (A2A_MAX_MESSAGE_PARTS)")  # fmt: skip


# A node waiting in the walk: its value, depth, whether it is inside a metadata value, and
# its parent node and name (its path, built only for an error).
Node = tuple[Any, int, bool, Any, str | int]


def walk(params: dict[str, Any], measure: bool) -> None:
    """Every object and array of `params` with its own stack (no recursion to overflow):
    each is refused past the depth cap, each outermost metadata value (when `measure`) past
    the size cap."""
    limit = settings.A2A_MAX_JSON_DEPTH
    pending: list[Node] = [(params, 1, False, None, "")]
    while pending:
        node = pending.pop()
        value, depth, inside, _, _ = node
        if depth > limit:
            raise invalid_params(path_of(node), f"is nested {depth} levels deep; a request may "
                                 f"nest at most {limit} (A2A_MAX_JSON_DEPTH)")  # fmt: skip
        if measure and not inside and node[4] == "metadata":
            check_metadata(node)
            inside = True
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, child in items:
            if isinstance(child, dict | list):
                pending.append((child, depth + 1, inside, node, key))


def check_metadata(node: Node) -> None:
    limit = settings.A2A_MAX_METADATA_BYTES
    text = json.dumps(node[0], ensure_ascii=False, separators=(",", ":"))
    size = len(text.encode(errors="surrogatepass"))
    if size > limit:
        raise invalid_params(path_of(node), f"is {size} bytes of JSON; metadata may be "
                             f"at most {limit} bytes (A2A_MAX_METADATA_BYTES)")  # fmt: skip


def path_of(node: Node) -> str:
    names: list[str | int] = []
    while node[3] is not None:
        names.append(node[4])
        node = node[3]
    path = ""
    for name in reversed(names):
        path = f"{path}[{name}]" if isinstance(name, int) else member(path, name)
    return path or "params"
