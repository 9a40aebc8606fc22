"""Events between processes: Redis sends a process its own events back; it skips them
without reading them, and hears every other process's."""

from __future__ import annotations

import orjson

from tasks import events

EVENTS: list[events.Event] = [(1, {"task": {"id": "t-1"}}), (2, {"statusUpdate": {"n": 2}})]


def test_a_process_skips_its_own_events_when_redis_sends_them_back() -> None:
    assert events.decode(events.encode(EVENTS)) is None


def test_a_process_hears_the_events_another_process_published() -> None:
    from_elsewhere = b"0f" * 16 + b" " + orjson.dumps(EVENTS)

    assert events.decode(from_elsewhere) == EVENTS


def test_a_message_of_an_unknown_form_is_dropped_not_raised() -> None:
    assert events.decode(b'{"origin":"elsewhere","events":[]}') is None
    assert events.decode(b"elsewhere [1, 2, 3]") is None
