"""A real hub process for the streaming tests, and an SSE client that reads it as A2A clients do.

The Django test client buffers a streamed ASGI response, so these tests start daphne once per
session (embedded mode: SQLite in a temporary DATA_DIR, no Redis) and read its streams over
HTTP line by line. The server sends `: keep-alive` every SSE_HEARTBEAT_SECONDS; that is set in
its environment because a settings fixture cannot reach another process.

Personas and their rights (on the `private` agent, which requires an API key):
- `caller`: holds a valid key; creates tasks there and may follow its own.
- `stranger`: holds another valid key; none of `caller`'s tasks exist for it.
Every other agent here is open: anyone may send to it and follow the tasks it made anonymously.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import ROOT, embedded_env, free_port, wait_for_http

V1 = "1.0"
V03 = "0.3"
VERSIONS = [V1, V03]
HEARTBEAT_SECONDS = 0.25
STREAM_DEADLINE = 20.0  # a stream that has not ended by then is a failure, not a hang
KEY_HEADER = "X-API-Key"

METHODS = {
    V1: {
        "send": "SendMessage",
        "stream": "SendStreamingMessage",
        "subscribe": "SubscribeToTask",
        "get": "GetTask",
        "cancel": "CancelTask",
    },
    V03: {
        "send": "message/send",
        "stream": "message/stream",
        "subscribe": "tasks/resubscribe",
        "get": "tasks/get",
        "cancel": "tasks/cancel",
    },
}
# The writer's essay is its topic line, then these paragraphs (executors/writer.py).
ESSAY_CHUNKS = 6
SECURED: dict[str, Any] = {
    "security_schemes": {"apiKey": {"type": "apiKey", "in": "header", "name": KEY_HEADER}},
    "security_requirements": [{"apiKey": []}],
}
# Each agent the tests stream from: slug -> Agent fields.
AGENTS: dict[str, dict[str, Any]] = {
    "quick": {"executor_kind": "writer", "executor_settings": {"delay": 0.02}},
    "essay": {"executor_kind": "writer", "executor_settings": {"delay": 0.3}},
    "idle": {"executor_kind": "writer", "executor_settings": {"delay": 1.5}},
    "mute": {"executor_kind": "echo", "streaming": False},
    "tck": {"executor_kind": "conformance"},
    "private": {"executor_kind": "writer", "executor_settings": {"delay": 0.3}, **SECURED},
}
SETUP_SCRIPT = """
import json, sys
import django
django.setup()
from django.core.management import call_command
from agents.models import Agent, ApiKey
call_command("migrate", interactive=False, verbosity=0)
for slug, fields in json.loads(sys.argv[1]).items():
    Agent.objects.create(slug=slug, name=slug.title(), description=f"The {slug} agent.", **fields)
print(json.dumps({name: ApiKey.issue(name)[1] for name in ("caller", "stranger")}))
"""


# -- the server -----------------------------------------------------------------------------


@dataclass
class StreamServer:
    """One running hub: its base URL and the API keys of the personas."""

    base: str
    keys: dict[str, str] = field(default_factory=dict)


def prepare(env: dict[str, str]) -> dict[str, str]:
    """Migrate, create the test agents and issue the personas' keys in one process."""
    done = subprocess.run(
        [sys.executable, "-c", SETUP_SCRIPT, json.dumps(AGENTS)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"setting up the hub failed:\n{done.stdout}\n{done.stderr}")
    keys: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return keys


def start_daphne(env: dict[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "a2ahub.daphne", "-b", "127.0.0.1", "-p", str(port)]
    with log.open("wb") as out:
        return subprocess.Popen(
            [*command, "a2ahub.asgi:application"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture(scope="session")
def stream_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamServer]:
    root = tmp_path_factory.mktemp("stream-hub")
    env = embedded_env(root / "data") | {"SSE_HEARTBEAT_SECONDS": str(HEARTBEAT_SECONDS)}
    keys = prepare(env)
    port, log = free_port(), root / "daphne.log"
    process = start_daphne(env, port, log)
    base = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_for_http(f"{base}/agents/quick/.well-known/agent-card.json", process)
        except (RuntimeError, TimeoutError) as exc:
            raise RuntimeError(f"{exc}\n{log.read_text(errors='replace')[-3000:]}") from exc
        yield StreamServer(base, keys)
    finally:
        stop(process)


@pytest.fixture
def http(stream_server: StreamServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=stream_server.base, timeout=10) as client:
        yield client


# -- requests -------------------------------------------------------------------------------


def user_message(
    version: str, text: str, message_id: str = "", task_id: str = ""
) -> dict[str, Any]:
    message: dict[str, Any] = {"messageId": message_id or f"msg-{uuid.uuid4().hex}"}
    if version == V1:
        message |= {"role": "ROLE_USER", "parts": [{"text": text}]}
    else:
        message |= {"kind": "message", "role": "user", "parts": [{"kind": "text", "text": text}]}
    if task_id:
        message["taskId"] = task_id
    return message


def rpc_body(version: str, op: str, params: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": f"req-{uuid.uuid4().hex[:8]}",
        "method": METHODS[version][op],
        "params": params,
    }


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
    configuration = {"returnImmediately": True} if version == V1 else {"blocking": False}
    params = {"message": user_message(version, text), "configuration": configuration}
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
    params = {"message": user_message(version, text, message_id)}
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


def state_of(event: dict[str, Any]) -> str:
    """A Task's or a status update's state in the 0.3 spelling, whichever version sent it."""
    state: str = event["status"]["state"]
    return state.removeprefix("TASK_STATE_").lower().replace("_", "-")


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
