"""Streams over HTTP+JSON: `message:stream` and `tasks/{id}:subscribe` (GET and POST) send
bare StreamResponses as SSE with the same event ids as JSON-RPC, `Last-Event-ID` fills in
what a dropped connection missed, 0.3 (`/v1/`) streams carry the 0.3 protobuf shapes, and an
error before the first event is an HTTP status with a `google.rpc.Status` body."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from tests.factories.envelopes import UNKNOWN_TASK
from tests.streaming.sse import Frame, Stream

V1_HEADERS = {"A2A-Version": "1.0"}


def message(text: str) -> dict[str, Any]:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}


@contextmanager
def rest_stream(
    http: httpx.Client,
    verb: str,
    path: str,
    body: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> Iterator[Stream]:
    headers = V1_HEADERS if headers is None else headers
    with http.stream(verb, path, json=body, headers=headers) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        yield Stream(response)


def kinds(frames: list[Frame]) -> list[str]:
    return [next(iter(frame.body)) for frame in frames]


def ids(frames: list[Frame]) -> list[int]:
    return [frame.id for frame in frames if frame.id is not None]


def chunks(frames: list[Frame]) -> str:
    return "".join(
        part.get("text", "")
        for frame in frames
        if "artifactUpdate" in frame.body
        for part in frame.body["artifactUpdate"]["artifact"]["parts"]
    )


def essay(http: httpx.Client, task_id: str) -> str:
    task = http.get(f"/agents/essay/rest/tasks/{task_id}", headers=V1_HEADERS).json()
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    return "".join(p["text"] for a in task["artifacts"] for p in a["parts"])


def test_a_rest_stream_sends_bare_stream_responses_with_event_ids(http: httpx.Client) -> None:
    body = {"message": message("rivers")}
    with rest_stream(http, "POST", "/agents/essay/rest/message:stream", body) as stream:
        frames = stream.rest()

    assert kinds(frames)[0] == "task" and kinds(frames)[-1] == "statusUpdate"
    assert frames[-1].body["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert ids(frames) == list(range(1, len(frames) + 1))
    assert chunks(frames) == essay(http, frames[0].body["task"]["id"])


@pytest.mark.parametrize("verb", ["GET", "POST"])
def test_resubscribing_with_last_event_id_gets_the_missed_events_then_live_ones(
    http: httpx.Client, verb: str
) -> None:
    body = {"message": message("bridges")}
    with rest_stream(http, "POST", "/agents/essay/rest/message:stream", body) as first:
        seen = first.take(4)  # then the client drops the connection mid-stream
    task_id = seen[0].body["task"]["id"]
    time.sleep(0.7)  # the writer goes on; what it writes now is only in storage

    headers = V1_HEADERS | {"Last-Event-ID": str(seen[-1].id)}
    path = f"/agents/essay/rest/tasks/{task_id}:subscribe"
    with rest_stream(http, verb, path, headers=headers) as second:
        snapshot, *resumed = second.rest()

    assert ids(seen) == [1, 2, 3, 4]
    assert snapshot.id is None and "task" in snapshot.body
    assert ids(resumed) == list(range(5, 5 + len(resumed)))
    assert resumed[-1].body["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert chunks(seen) + chunks(resumed) == essay(http, task_id)


def test_a_03_rest_stream_carries_the_03_shapes_and_ends_with_final(http: httpx.Client) -> None:
    body = {"request": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER",
                        "content": [{"text": "lakes"}]}}  # fmt: skip
    with rest_stream(http, "POST", "/agents/essay/rest/v1/message:stream", body, {}) as stream:
        frames = stream.rest()

    assert kinds(frames)[0] == "task"
    last = frames[-1].body["statusUpdate"]
    assert (last["status"]["state"], last["final"]) == ("TASK_STATE_COMPLETED", True)
    assert ids(frames) == list(range(1, len(frames) + 1))


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        (f"/agents/essay/rest/tasks/{UNKNOWN_TASK}:subscribe", V1_HEADERS),
        (f"/agents/essay/rest/v1/tasks/{UNKNOWN_TASK}:subscribe", {}),
    ],
)
def test_subscribing_to_an_unknown_task_is_a_404_before_any_stream(
    http: httpx.Client, path: str, headers: dict[str, str]
) -> None:
    response = http.post(path, headers=headers)

    assert response.status_code == 404
    assert response.headers["content-type"] == "application/a2a+json"
    error = response.json()["error"]
    assert (error["code"], error["status"]) == (404, "NOT_FOUND")
    assert error["details"][0]["reason"] == "TASK_NOT_FOUND"


def test_subscribing_to_a_finished_task_is_unsupported(http: httpx.Client) -> None:
    sent = http.post(
        "/agents/quick/rest/message:send", json={"message": message("x")}, headers=V1_HEADERS
    ).json()["task"]

    response = http.get(f"/agents/quick/rest/tasks/{sent['id']}:subscribe", headers=V1_HEADERS)

    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["reason"] == "UNSUPPORTED_OPERATION"
