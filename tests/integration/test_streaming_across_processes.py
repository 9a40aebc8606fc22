"""Streams across the distributed hub: a stream sent through web process A is followed through
web process B (events cross over Redis), for an inline agent and for a worker-mode one; and a
client that goes away frees its Redis subscription."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
import redis

from a2ahub import bus
from tasks.events import CHANNEL_PREFIX
from tests.factories.messages import wire_message
from tests.factories.versions import V1, VERSIONS
from tests.integration.stack import Hub
from tests.protocol.answers import state_of
from tests.streaming.sse import (
    Frame,
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

pytestmark = pytest.mark.integration
both_versions = pytest.mark.parametrize("version", VERSIONS)
RELEASE_TIMEOUT = 5.0


@pytest.fixture
def web_a(hub: Hub) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=hub.web_a, timeout=15) as client:
        yield client


@pytest.fixture
def web_b(hub: Hub) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=hub.web_b, timeout=15) as client:
        yield client


def follow_elsewhere(
    web_a: httpx.Client, web_b: httpx.Client, slug: str, version: str, text: str
) -> tuple[list[Frame], list[Frame]]:
    """Stream a send through A; once it is under way, subscribe to its task through B."""
    params = {"message": wire_message(version, text)}
    with open_stream(web_a, slug, version, "stream", params) as sent:
        opening = sent.take(2)
        task_id = payload(opening[0].result, version)["id"]
        with open_stream(web_b, slug, version, "subscribe", {"id": task_id}) as followed:
            from_b = followed.rest()
        from_a = opening + sent.rest()
    return from_a, from_b


def assert_same_stream(from_a: list[Frame], from_b: list[Frame], version: str) -> None:
    snapshot, *live = from_b
    assert kind_of(snapshot.result, version) == "task" and snapshot.id is None
    assert stored_ids(from_a) == list(range(1, len(from_a) + 1))
    assert len(stored_events(live)) == len(live)
    start = stored_ids(live)[0]
    # B opened while A was already reading: from B's first event on, the two are the same.
    assert stored_events(live) == [e for e in stored_events(from_a) if e[0] >= start]
    assert state_of(payload(live[-1].result, version)) == "completed"


@both_versions
def test_a_stream_sent_through_one_web_process_is_followed_through_the_other(
    web_a: httpx.Client, web_b: httpx.Client, version: str
) -> None:
    from_a, from_b = follow_elsewhere(web_a, web_b, "writer", version, "harbours")

    assert_same_stream(from_a, from_b, version)
    assert len(from_b) >= 8  # most of the essay reached B live, over Redis
    task_id = payload(from_a[0].result, version)["id"]
    stored = call(web_b, "writer", version, "get", {"id": task_id})["result"]
    assert chunks_in(from_a, version) == artifact_text(stored)


@both_versions
def test_a_worker_mode_stream_through_one_web_process_is_followed_through_the_other(
    web_a: httpx.Client, web_b: httpx.Client, version: str
) -> None:
    # The slow agent runs on a Celery worker: neither web process runs it.
    from_a, from_b = follow_elsewhere(web_a, web_b, "slow", version, "2")

    assert_same_stream(from_a, from_b, version)
    assert chunks_in(from_b, version) == "Worked for 2 seconds."
    progress = [
        payload(f.result, version)["status"]["message"]["parts"][0]["text"]
        for f in from_b[1:]
        if kind_of(f.result, version) == "status"
        and "message" in payload(f.result, version)["status"]
    ]
    assert "2 of 2 seconds done." in progress


def subscribers(hub: Hub, task_id: str) -> int:
    client = redis.Redis.from_url(hub.env["REDIS_URL"], socket_timeout=5)
    try:
        [(_, count)] = client.pubsub_numsub(
            bus.channel_prefix(hub.env["REDIS_URL"]) + CHANNEL_PREFIX + task_id
        )
        return int(count)
    finally:
        client.close()


def wait_for_subscribers(hub: Hub, task_id: str, wanted: int) -> int:
    deadline = time.monotonic() + RELEASE_TIMEOUT
    count = subscribers(hub, task_id)
    while count != wanted and time.monotonic() < deadline:
        time.sleep(0.1)
        count = subscribers(hub, task_id)
    return count


@pytest.mark.parametrize("method", ["subscribe", "stream"])
def test_a_client_that_disconnects_frees_its_redis_subscription(
    hub: Hub, web_a: httpx.Client, method: str
) -> None:
    task_id = ""
    if method == "subscribe":
        task_id = start_task(web_a, "slow", V1, "20")["id"]
        stream = open_stream(web_a, "slow", V1, "subscribe", {"id": task_id})
    else:
        stream = open_stream(web_a, "slow", V1, "stream", {"message": wire_message(V1, "20")})
    try:
        with stream as opened:
            task_id = payload(opened.take(1)[0].result, V1)["id"]
            assert wait_for_subscribers(hub, task_id, 1) == 1
        # The client has closed its connection; the task itself goes on working.
        assert wait_for_subscribers(hub, task_id, 0) == 0
        still = call(web_a, "slow", V1, "get", {"id": task_id})["result"]
        assert state_of(still) in {"submitted", "working"}
    finally:
        if task_id:
            call(web_a, "slow", V1, "cancel", {"id": task_id})


@both_versions
def test_an_inline_stream_ends_canceled_when_its_task_is_canceled_through_the_other_process(
    web_a: httpx.Client, web_b: httpx.Client, version: str
) -> None:
    # The writer runs inline on A, whose stream listens to A alone; the cancel is written on B.
    params = {"message": wire_message(version, "lighthouses")}
    with open_stream(web_a, "writer", version, "stream", params) as sent:
        opening = sent.take(2)
        task_id = payload(opening[0].result, version)["id"]
        canceled = call(web_b, "writer", version, "cancel", {"id": task_id})["result"]
        frames = opening + sent.rest()

    assert state_of(canceled) == "canceled"
    assert stored_ids(frames) == list(range(1, len(frames) + 1))
    assert kind_of(frames[-1].result, version) == "status"
    assert state_of(payload(frames[-1].result, version)) == "canceled"
    stored = call(web_a, "writer", version, "get", {"id": task_id})["result"]
    assert state_of(stored) == "canceled"
