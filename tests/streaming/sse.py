"""An SSE client for a running hub, reading its streams line by line as A2A clients do, and
readers of the events of either version it carries.

The Django test client buffers a streamed ASGI response, so the streaming tests (and the
integration tests) read a real server over HTTP with httpx.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from tests.factories.agents import KEY_HEADER
from tests.factories.envelopes import NON_BLOCKING, rpc_body
from tests.factories.messages import wire_message
from tests.factories.versions import V1

STREAM_DEADLINE = 20.0  # a stream that has not ended by then is a failure, not a hang


# -- requests -------------------------------------------------------------------------------


def headers_for(
    version: str, key: str | None = None, last_event_id: int | None = None
) -> dict[str, str]:
    headers = {"A2A-Version": version}
    if key is not None:
        headers[KEY_HEADER] = key
    if last_event_id is not None:
        headers["Last-Event-ID"] = str(last_event_id)
    return headers


def call(
    http: httpx.Client,
    slug: str,
    version: str,
    op: str,
    params: dict[str, Any],
    key: str | None = None,
) -> dict[str, Any]:
    """A plain (not streamed) JSON-RPC call; returns the whole response object."""
    response = http.post(
        f"/agents/{slug}/jsonrpc/",
        json=rpc_body(version, op, params),
        headers=headers_for(version, key),
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def start_task(
    http: httpx.Client, slug: str, version: str, text: str = "rivers", key: str | None = None
) -> dict[str, Any]:
    """A non-blocking send: the task as stored, its executor still running on the server."""
    params = {"message": wire_message(version, text), "configuration": NON_BLOCKING[version]}
    body = call(http, slug, version, "send", params, key)
    assert "result" in body, body
    return payload(body["result"], version)


# -- reading streams ------------------------------------------------------------------------


@dataclass
class Frame:
    """One SSE event: its `id:` (None when absent) and the JSON-RPC response in its `data:`."""

    id: int | None
    body: dict[str, Any]

    @property
    def result(self) -> dict[str, Any]:
        assert "result" in self.body, self.body
        result: dict[str, Any] = self.body["result"]
        return result

    @property
    def error(self) -> dict[str, Any]:
        assert "error" in self.body, self.body
        error: dict[str, Any] = self.body["error"]
        return error


class Stream:
    """An open SSE response, read frame by frame; comments (keep-alives) are kept apart."""

    def __init__(self, response: httpx.Response, deadline: float = STREAM_DEADLINE) -> None:
        self.response = response
        self.is_sse = response.headers.get("content-type", "").startswith("text/event-stream")
        self.lines = response.iter_lines()
        self.comments: list[str] = []
        self.deadline = time.monotonic() + deadline
        self.ended = False

    def next(self) -> Frame | None:
        """The next frame, or None once the server has closed the stream."""
        if not self.is_sse:
            if self.ended:
                return None
            self.ended = True
            return Frame(None, json.loads(self.response.read()))
        sequence: int | None = None
        data: list[str] = []
        for line in self.lines:
            assert time.monotonic() < self.deadline, "the stream did not end in time"
            if line.startswith(":"):
                self.comments.append(line[1:].strip())
            elif line.startswith("id:"):
                sequence = int(line[3:].strip())
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif not line and data:
                return Frame(sequence, json.loads("\n".join(data)))
        self.ended = True
        return None

    def take(self, count: int) -> list[Frame]:
        frames: list[Frame] = []
        for _ in range(count):
            frame = self.next()
            assert frame is not None, "the stream ended early"
            frames.append(frame)
        return frames

    def rest(self) -> list[Frame]:
        """Every frame until the server closes the stream."""
        frames: list[Frame] = []
        while (frame := self.next()) is not None:
            frames.append(frame)
        return frames

    def through(self, sequence: int) -> list[Frame]:
        """Frames up to and including the first stored event numbered `sequence` or later."""
        frames: list[Frame] = []
        while not stored_ids(frames) or stored_ids(frames)[-1] < sequence:
            frames += self.take(1)
        return frames

    def until_cut(self) -> tuple[list[Frame], bool]:
        """Every frame still readable, and whether the connection broke (its server died)
        rather than the stream ending as it should."""
        frames: list[Frame] = []
        try:
            while (frame := self.next()) is not None:
                frames.append(frame)
        except httpx.TransportError:
            return frames, True
        return frames, False


@contextmanager
def open_stream(
    http: httpx.Client,
    slug: str,
    version: str,
    op: str,
    params: dict[str, Any],
    key: str | None = None,
    last_event_id: int | None = None,
) -> Iterator[Stream]:
    """POST a streaming method; leaving the block closes the connection, finished or not."""
    with http.stream(
        "POST",
        f"/agents/{slug}/jsonrpc/",
        json=rpc_body(version, op, params),
        headers=headers_for(version, key, last_event_id),
    ) as response:
        assert response.status_code == 200, response.read()
        yield Stream(response)


def stream_send(
    http: httpx.Client,
    slug: str,
    version: str,
    text: str = "rivers",
    message_id: str = "",
    key: str | None = None,
) -> list[Frame]:
    params = {"message": wire_message(version, text, message_id)}
    with open_stream(http, slug, version, "stream", params, key) as stream:
        return stream.rest()


# -- reading events of either version -------------------------------------------------------

V1_KINDS = {
    "task": "task",
    "message": "message",
    "statusUpdate": "status",
    "artifactUpdate": "artifact",
}
V03_KINDS = {
    "task": "task",
    "message": "message",
    "status-update": "status",
    "artifact-update": "artifact",
}


def kind_of(result: dict[str, Any], version: str) -> str:
    """task, message, status or artifact: a 1.0 result names it by its one member, 0.3 by kind."""
    if version == V1:
        assert len(result) == 1 and "kind" not in next(iter(result.values())), result
        return V1_KINDS[next(iter(result))]
    return V03_KINDS[result["kind"]]


def payload(result: dict[str, Any], version: str) -> dict[str, Any]:
    """The event itself: unwrapped from its member in 1.0, as it is in 0.3."""
    if version == V1:
        inner: dict[str, Any] = next(iter(result.values()))
        return inner
    return result


def chunk_text(event: dict[str, Any]) -> str:
    return "".join(part.get("text", "") for part in event["artifact"]["parts"])


def chunks_in(frames: list[Frame], version: str) -> str:
    """The text of every artifact chunk among the frames, in order."""
    return "".join(
        chunk_text(payload(f.result, version))
        for f in frames
        if kind_of(f.result, version) == "artifact"
    )


def artifact_text(task: dict[str, Any]) -> str:
    return "".join(
        part.get("text", "") for artifact in task.get("artifacts", []) for part in artifact["parts"]
    )


def stored_events(frames: list[Frame]) -> list[tuple[int, dict[str, Any]]]:
    """(id, result) of every frame that carries a stored event, as a client would keep them."""
    return [(f.id, f.result) for f in frames if f.id is not None]


def stored_ids(frames: list[Frame]) -> list[int]:
    return [f.id for f in frames if f.id is not None]
