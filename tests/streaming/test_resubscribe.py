"""Re-attaching to a task's stream (SubscribeToTask, tasks/resubscribe): the current Task first,
then live events; `Last-Event-ID` fills in what a dropped connection missed; several subscribers
see the same stream; terminal, unknown and other callers' tasks are refused."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.factories.envelopes import UNKNOWN_TASK
from tests.factories.messages import wire_message
from tests.factories.versions import V03, V1, VERSIONS
from tests.helpers import eventually
from tests.protocol.answers import state_of
from tests.streaming.server import StreamServer
from tests.streaming.sse import (
    artifact_text,
    call,
    chunks_in,
    kind_of,
    open_stream,
    payload,
    start_task,
    stored_events,
    stored_ids,
)

both_versions = pytest.mark.parametrize("version", VERSIONS)


def essay_of(http: httpx.Client, slug: str, version: str, task_id: str) -> str:
    task = call(http, slug, version, "get", {"id": task_id})["result"]  # a bare Task
    assert state_of(task) == "completed", task
    return artifact_text(task)


def written_text(http: httpx.Client, slug: str, version: str, task_id: str) -> str:
    """The artifact text the task holds so far."""
    return artifact_text(call(http, slug, version, "get", {"id": task_id})["result"])


@both_versions
def test_subscribing_to_a_terminal_task_is_an_unsupported_operation(
    http: httpx.Client, version: str
) -> None:
    done = call(http, "quick", version, "send", {"message": wire_message(version, "done")})
    task_id = payload(done["result"], version)["id"]

    with open_stream(http, "quick", version, "subscribe", {"id": task_id}) as stream:
        frames = stream.rest()

    assert [f.error["code"] for f in frames] == [-32004]


@both_versions
def test_subscribing_to_an_unknown_task_is_task_not_found(http: httpx.Client, version: str) -> None:
    with open_stream(http, "essay", version, "subscribe", {"id": UNKNOWN_TASK}) as stream:
        frames = stream.rest()

    assert [f.error["code"] for f in frames] == [-32001]


@both_versions
def test_subscribing_to_another_callers_task_is_task_not_found(
    http: httpx.Client, stream_server: StreamServer, version: str
) -> None:
    keys = stream_server.keys
    task = start_task(http, "private", version, key=keys["caller"])

    with open_stream(
        http, "private", version, "subscribe", {"id": task["id"]}, key=keys["stranger"]
    ) as stream:
        refused = stream.rest()
    with open_stream(
        http, "private", version, "subscribe", {"id": task["id"]}, key=keys["caller"]
    ) as stream:
        own = stream.take(1)

    assert [f.error["code"] for f in refused] == [-32001]
    assert kind_of(own[0].result, version) == "task"


@both_versions
def test_a_subscription_begins_with_the_current_task_then_live_events(
    http: httpx.Client, version: str
) -> None:
    task = start_task(http, "essay", version)
    assert eventually(lambda: written_text(http, "essay", version, task["id"]) != "")

    with open_stream(http, "essay", version, "subscribe", {"id": task["id"]}) as stream:
        snapshot, *live = stream.rest()

    current = payload(snapshot.result, version)
    assert kind_of(snapshot.result, version) == "task" and snapshot.id is None
    assert current["id"] == task["id"] and state_of(current) == "working"
    assert artifact_text(current)  # already written, so not sent again as events
    ids = stored_ids(live)
    assert len(ids) == len(live) and ids == list(range(ids[0], ids[0] + len(ids)))
    assert ids[0] > 2
    assert state_of(payload(live[-1].result, version)) == "completed"
    if version == V03:
        assert [f.result.get("final") for f in live if f.result["kind"] == "status-update"][-1]
    # Nothing missing, nothing twice: the snapshot's text plus the live chunks is the essay.
    assert artifact_text(current) + chunks_in(live, version) == essay_of(
        http, "essay", version, task["id"]
    )


@both_versions
def test_reconnecting_with_last_event_id_gets_the_missed_events_then_live_ones(
    http: httpx.Client, version: str
) -> None:
    params = {"message": wire_message(version, "bridges")}
    with open_stream(http, "essay", version, "stream", params) as first:
        seen = first.take(4)  # then the client drops the connection mid-stream
    task_id = payload(seen[0].result, version)["id"]
    time.sleep(0.7)  # the writer goes on; what it writes now is only in storage

    with open_stream(
        http, "essay", version, "subscribe", {"id": task_id}, last_event_id=seen[-1].id
    ) as second:
        snapshot, *resumed = second.rest()

    assert stored_ids(seen) == [1, 2, 3, 4]
    assert snapshot.id is None and kind_of(snapshot.result, version) == "task"
    ids = stored_ids(resumed)
    assert len(ids) == len(resumed) and ids == list(range(5, 5 + len(ids)))
    assert state_of(payload(resumed[-1].result, version)) == "completed"
    # Events 5... were stored while nobody listened (the snapshot already holds their text).
    assert len(artifact_text(payload(snapshot.result, version))) > len(chunks_in(seen, version))
    whole = chunks_in(seen, version) + chunks_in(resumed, version)
    assert whole == essay_of(http, "essay", version, task_id)


@both_versions
def test_two_subscribers_of_one_task_get_identical_ordered_streams(
    http: httpx.Client, stream_server: StreamServer, version: str
) -> None:
    task = start_task(http, "essay", version)

    with (
        httpx.Client(base_url=stream_server.base, timeout=10) as other,
        open_stream(http, "essay", version, "subscribe", {"id": task["id"]}) as one,
        open_stream(other, "essay", version, "subscribe", {"id": task["id"]}) as two,
    ):
        first, second = one.rest(), two.rest()

    assert [kind_of(s[0].result, version) for s in (first, second)] == ["task", "task"]
    # The second may have opened an event later; from there on the two are the same.
    start = stored_ids(second)[0]
    assert [e for e in stored_events(first) if e[0] >= start] == stored_events(second)
    assert len(stored_events(second)) == len(second) - 1 >= 8
    assert stored_ids(first) == list(range(stored_ids(first)[0], stored_ids(first)[-1] + 1))
    assert state_of(payload(second[-1].result, version)) == "completed"


def test_a_stream_subscribed_with_last_event_id_zero_replays_the_whole_task(
    http: httpx.Client,
) -> None:
    task = start_task(http, "essay", V1)
    time.sleep(0.5)

    with open_stream(http, "essay", V1, "subscribe", {"id": task["id"]}, last_event_id=0) as stream:
        snapshot, *events = stream.rest()

    assert snapshot.id is None
    assert stored_ids(events) == list(range(1, len(events) + 1))
    assert kind_of(events[0].result, V1) == "task"
    assert chunks_in(events, V1) == essay_of(http, "essay", V1, task["id"])
