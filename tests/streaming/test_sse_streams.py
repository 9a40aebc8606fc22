"""Streamed sends (SendStreamingMessage, message/stream) as a client reads them over SSE: the
Task first, then status and artifact updates in order with gapless `id:`s, how each version
ends the stream, a direct Message reply, agents that do not stream, and keep-alive comments."""

from __future__ import annotations

import httpx
import pytest

from tests.factories.messages import wire_message
from tests.factories.versions import V03, V1, VERSIONS
from tests.protocol.answers import state_of
from tests.streaming.server import ESSAY_CHUNKS
from tests.streaming.sse import (
    call,
    chunk_text,
    kind_of,
    open_stream,
    payload,
    stored_ids,
    stream_send,
)

both_versions = pytest.mark.parametrize("version", VERSIONS)


@both_versions
def test_a_streamed_send_yields_the_task_then_its_updates_in_order(
    http: httpx.Client, version: str
) -> None:
    frames = stream_send(http, "quick", version, "rivers")

    kinds = [kind_of(f.result, version) for f in frames]
    assert kinds[0] == "task"
    assert state_of(payload(frames[0].result, version)) == "submitted"
    assert set(kinds[1:]) == {"status", "artifact"}
    assert kinds.count("artifact") == ESSAY_CHUNKS
    states = [
        state_of(payload(f.result, version))
        for f in frames
        if kind_of(f.result, version) == "status"
    ]
    assert states[:-1] == ["working"] * (len(states) - 1) and states[-1] == "completed"
    task_id = payload(frames[0].result, version)["id"]
    assert {payload(f.result, version)["taskId"] for f in frames[1:]} == {task_id}


@both_versions
def test_every_frame_of_a_stored_event_has_the_next_id(http: httpx.Client, version: str) -> None:
    frames = stream_send(http, "quick", version)

    assert [f.id for f in frames] == list(range(1, len(frames) + 1))


@both_versions
def test_artifact_chunks_append_after_the_first_and_the_last_says_so(
    http: httpx.Client, version: str
) -> None:
    frames = stream_send(http, "quick", version, "rivers")

    chunks = [
        payload(f.result, version) for f in frames if kind_of(f.result, version) == "artifact"
    ]
    # 1.0 leaves a false boolean out of the JSON; 0.3 writes it.
    assert [c.get("append", False) for c in chunks] == [False] + [True] * (len(chunks) - 1)
    assert [c.get("lastChunk", False) for c in chunks] == [False] * (len(chunks) - 1) + [True]
    assert len({c["artifact"]["artifactId"] for c in chunks}) == 1
    assert chunk_text(chunks[0]) == "On rivers.\n\n"
    final = call(http, "quick", version, "get", {"id": chunks[0]["taskId"]})["result"]
    assert "".join(chunk_text(c) for c in chunks) == "".join(
        p["text"] for p in final["artifacts"][0]["parts"]
    )


def test_a_tck_chunked_artifact_streams_as_two_chunks(http: httpx.Client) -> None:
    frames = stream_send(http, "tck", V03, message_id="tck-stream-artifact-chunked-0001")

    chunks = [f.result for f in frames if f.result["kind"] == "artifact-update"]
    assert [(c["append"], c["lastChunk"], chunk_text(c)) for c in chunks] == [
        (False, False, "chunk-1 "),
        (True, True, "chunk-2"),
    ]


def test_in_0_3_only_the_last_status_update_is_final(http: httpx.Client) -> None:
    frames = stream_send(http, "quick", V03)

    updates = [f.result for f in frames if f.result["kind"] == "status-update"]
    assert [u["final"] for u in updates] == [False] * (len(updates) - 1) + [True]
    assert frames[-1].result is updates[-1] and updates[-1]["status"]["state"] == "completed"


def test_in_1_0_the_stream_closes_after_the_completed_status_without_a_final_flag(
    http: httpx.Client,
) -> None:
    frames = stream_send(http, "quick", V1)

    assert all("final" not in payload(f.result, V1) for f in frames)
    assert state_of(frames[-1].result["statusUpdate"]) == "completed"


@both_versions
def test_a_direct_reply_is_a_single_message_and_the_stream_ends(
    http: httpx.Client, version: str
) -> None:
    frames = stream_send(http, "tck", version, message_id="tck-message-response-0001")

    assert len(frames) == 1
    assert kind_of(frames[0].result, version) == "message"
    message = payload(frames[0].result, version)
    assert [p["text"] for p in message["parts"]] == ["Direct message response"]
    assert frames[0].id is None


@both_versions
def test_an_agent_that_does_not_stream_refuses_both_streaming_methods(
    http: httpx.Client, version: str
) -> None:
    task = call(http, "mute", version, "send", {"message": wire_message(version, "hi")})
    task_id = payload(task["result"], version)["id"]

    params = {"message": wire_message(version, "hi")}
    with open_stream(http, "mute", version, "stream", params) as stream:
        refused_send = stream.rest()
    with open_stream(http, "mute", version, "subscribe", {"id": task_id}) as stream:
        refused_subscribe = stream.rest()

    assert [f.error["code"] for f in refused_send] == [-32004]
    assert [f.error["code"] for f in refused_subscribe] == [-32004]


def test_an_idle_stream_gets_keep_alive_comments_and_then_carries_on(http: httpx.Client) -> None:
    # The idle writer waits 1.5 s before its first chunk; the server's heartbeat is 0.25 s.
    params = {"message": wire_message(V1, "silence")}
    with open_stream(http, "idle", V1, "stream", params) as stream:
        opening = stream.take(2)
        quiet_before = len(stream.comments)
        first_chunk = stream.next()

    assert [kind_of(f.result, V1) for f in opening] == ["task", "status"]
    assert first_chunk is not None and kind_of(first_chunk.result, V1) == "artifact"
    assert first_chunk.id == 3
    assert len(stream.comments) - quiet_before >= 2
    assert set(stream.comments) == {"keep-alive"}


@both_versions
def test_a_stream_ends_when_the_task_needs_input_and_the_follow_up_streams_on(
    http: httpx.Client, version: str
) -> None:
    asked = stream_send(http, "tck", version, message_id="tck-input-required-0001")
    task = payload(asked[0].result, version)
    params = {
        "message": wire_message(version, "here", "tck-complete-task-0002", task_id=task["id"])
    }
    with open_stream(http, "tck", version, "stream", params) as stream:
        answered = stream.rest()

    assert state_of(payload(asked[-1].result, version)) == "input-required"
    if version == V03:
        assert asked[-1].result["final"] is True
    # The follow-up opens with the task as it is now, the reply taken in (a snapshot, not a
    # stored event), then the events after it.
    snapshot = payload(answered[0].result, version)
    assert kind_of(answered[0].result, version) == "task" and answered[0].id is None
    assert state_of(snapshot) == "working"
    assert snapshot["history"][-1]["messageId"] == "tck-complete-task-0002"
    ids = stored_ids(answered)
    assert ids == list(range(ids[0], ids[0] + len(answered) - 1)) and ids[0] > len(asked)
    assert state_of(payload(answered[-1].result, version)) == "completed"
