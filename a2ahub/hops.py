"""The hop count of hub-to-hub calls: how many hubs a request has passed through already.

Every A2A call the hub makes from an agent turn (an `a2a-remote` agent, an HTTP backend, the
orchestrator) carries `A2A-Hub-Hops: n + 1`, where n is the count the turn's task arrived
with (kept in the task's metadata under `a2aHubHops`); a request without the header is at 0.
The door refuses a request whose count is past A2A_MAX_HOPS, so an agent that reaches itself
through other hubs ends at the limit instead of calling without end.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HEADER = "A2A-Hub-Hops"
METADATA_KEY = "a2aHubHops"
# A count this long is no count: refused before it is read as a number.
MAX_DIGITS = 6


class BadHops(ValueError):
    """The header is not a whole number."""


def parse(raw: str) -> int:
    """The count a header holds ("" is 0); raises BadHops."""
    text = raw.strip()
    if not text:
        return 0
    if not text.isascii() or not text.isdigit() or len(text) > MAX_DIGITS:
        raise BadHops(f"{HEADER} must be a whole number of hubs, not {raw[:20]!r}")
    return int(text)


def of(metadata: Mapping[str, Any] | None) -> int:
    """The count a task arrived with (0 for one from a client, not a hub)."""
    value = (metadata or {}).get(METADATA_KEY, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def next_headers(metadata: Mapping[str, Any] | None) -> dict[str, str]:
    """The header of a call made from a turn of a task with this metadata: one hop more."""
    return {HEADER: str(of(metadata) + 1)}


def stamped(metadata: dict[str, Any], hops: int) -> dict[str, Any]:
    """Task metadata carrying the count its request came with; a client's own value under the
    key never stands (only the header, read at the door, sets it)."""
    kept = {key: value for key, value in metadata.items() if key != METADATA_KEY}
    if hops > 0:
        kept[METADATA_KEY] = hops
    return kept
