"""Events between processes: a process reads the events another process published (the bus
skips the process's own, which Redis sends back, before they are read: tests/test_bus.py)."""

from __future__ import annotations

import orjson

from tasks import events

EVENTS: list[events.Event] = [(1, {"task": {"id": "t-1"}}), (2, {"statusUpdate": {"n": 2}})]


def test_a_process_hears_the_events_another_process_published() -> None:
    assert events.decode(orjson.dumps(EVENTS)) == EVENTS
    assert events.decode(events.encode(EVENTS)) == EVENTS


def test_a_message_of_an_unknown_form_is_dropped_not_raised() -> None:
    assert events.decode(b'{"origin":"elsewhere","events":[]}') is None
    assert events.decode(b"[1, 2, 3]") is None
    assert events.decode(b"elsewhere [1, 2, 3]") is None
