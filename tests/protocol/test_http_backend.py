"""The `http` executor kind: a real backend on 127.0.0.1 answers A2A messages in both versions.

The backend is an http.server in a thread; each test queues the answers it gives, in order,
and reads back the requests the hub made (headers and exact body bytes).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.forms.models import model_to_dict
from django.test import Client
from jwcrypto import jwk, jwt

from a2ahub.signing import SignatureInvalid, verify_delivery
from agents.forms import AgentForm
from agents.models import Agent
from tasks import runner
from tests.factories.agents import secured_agent
from tests.factories.envelopes import envelope
from tests.factories.messages import wire_message
from tests.factories.versions import V03, V1
from tests.helpers import serving
from tests.protocol.answers import artifact_texts, is_terminal, state_of, texts
from tests.protocol.callers import AsyncCaller, Caller

pytestmark = pytest.mark.django_db
both_versions = pytest.mark.parametrize("version", [V03, V1])
CHART = "https://files.example.com/chart.png"


@dataclass
class Answer:
    body: Any = field(default_factory=lambda: {"state": "completed"})
    status: int = 200
    content_type: str = "application/json"
    delay: float = 0.0
    pause: threading.Event | None = None  # after the first line: wait until the test sets it
    missing: int = 0  # bytes the Content-Length promises but the backend never sends

    def content(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, list):  # NDJSON: one event object a line
            return b"".join(json.dumps(event).encode() + b"\n" for event in self.body)
        return json.dumps(self.body).encode()


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.body)
        return value


class Backend:
    """Answers each POST with the next queued Answer (a completed task once none is left)."""

    def __init__(self, server: ThreadingHTTPServer) -> None:
        self.url = f"http://127.0.0.1:{server.server_address[1]}/a2a"
        self.answers: list[Answer] = []
        self.received: list[Received] = []
        self.lock = threading.Lock()

    def queue(self, *answers: Answer) -> None:
        with self.lock:
            self.answers.extend(answers)

    def take(self, received: Received) -> Answer:
        with self.lock:
            self.received.append(received)
            return self.answers.pop(0) if self.answers else Answer()


def handler_for(backend: Backend) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            answer = backend.take(Received(dict(self.headers.items()), body))
            time.sleep(answer.delay)
            content = answer.content()
            try:
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                self.send_header("Content-Length", str(len(content) + answer.missing))
                self.end_headers()
                if answer.pause is not None:
                    first, _, content = content.partition(b"\n")
                    self.wfile.write(first + b"\n")
                    self.wfile.flush()
                    answer.pause.wait(timeout=10)
                self.wfile.write(content)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the hub stopped waiting (a canceled turn)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def backend(settings: Any) -> Iterator[Backend]:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    backend = Backend(server)
    server.RequestHandlerClass = handler_for(backend)
    with serving(server):
        yield backend


@pytest.fixture
def remote(backend: Backend) -> Agent:
    return secured_agent("remote", "http", executor_settings={"url": backend.url, "retries": 1},
                         default_output_modes=["text/plain", "application/json"])  # fmt: skip


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def status_text(task: dict[str, Any]) -> str:
    return " ".join(texts(task["status"].get("message")))


# -- answers ---------------------------------------------------------------------------------


@both_versions
def test_a_json_reply_completes_the_task_with_its_artifacts(
    caller: Caller, remote: Agent, backend: Backend, version: str
) -> None:
    backend.queue(Answer({
        "message": "Done.",
        "artifacts": [
            {"name": "summary", "text": "short"},
            {"name": "numbers", "data": {"n": 3}},
            {"name": "chart", "parts": [{"url": CHART, "mediaType": "image/png"}]},
        ],
    }))  # fmt: skip

    task = caller.send("remote", version, text="summarise")

    assert state_of(task) == "completed"
    assert status_text(task) == "Done."
    assert [a["name"] for a in task["artifacts"]] == ["summary", "numbers", "chart"]
    assert artifact_texts(task) == ["short"]
    assert task["artifacts"][1]["parts"][0]["data"] == {"n": 3}
    chart = task["artifacts"][2]["parts"][0]
    assert (chart["url"] if version == V1 else chart["file"]["uri"]) == CHART


@both_versions
def test_input_required_asks_and_the_follow_up_completes_the_task(
    caller: Caller, remote: Agent, backend: Backend, version: str
) -> None:
    backend.queue(
        Answer({"state": "input-required", "message": "Which city?"}),
        Answer({"artifacts": [{"name": "forecast", "text": "Sunny in Lyon."}]}),
    )

    asked = caller.send("remote", version, text="weather?")
    assert state_of(asked) == "input-required"
    assert status_text(asked) == "Which city?"

    answered = caller.send("remote", version, text="Lyon", message={
        "taskId": asked["id"], "contextId": asked["contextId"]})  # fmt: skip
    assert state_of(answered) == "completed"
    assert artifact_texts(answered) == ["Sunny in Lyon."]
    follow_up = backend.received[1].json()
    assert follow_up["taskId"] == asked["id"]
    assert [texts(m) for m in follow_up["history"]] == [["weather?"], ["Which city?"], ["Lyon"]]


@both_versions
def test_a_reply_answer_is_a_single_message_without_a_task(
    caller: Caller, remote: Agent, backend: Backend, version: str
) -> None:
    backend.queue(Answer({"reply": "Hello there."}))

    result = caller.result("remote", version, "send", text="hi")

    message = result["message"] if version == V1 else result
    assert version == V1 or message["kind"] == "message"
    assert texts(message) == ["Hello there."]


@both_versions
def test_an_ndjson_reply_streams_one_artifact_in_chunks_with_progress(
    caller: Caller, remote: Agent, backend: Backend, version: str
) -> None:
    backend.queue(Answer([
        {"status": "Reading the question"},
        {"artifact": {"name": "essay", "text": "Once "}},
        {"status": "Half-way"},
        {"artifact": {"text": "upon "}},
        {"artifact": {"text": "a time.", "lastChunk": True}},
        {"state": "completed", "message": "Written."},
    ], content_type="application/x-ndjson"))  # fmt: skip

    task = caller.send("remote", version, text="write")

    assert state_of(task) == "completed"
    stored = caller.get("remote", version, task["id"])
    assert len(stored["artifacts"]) == 1
    assert stored["artifacts"][0]["name"] == "essay"
    assert "".join(artifact_texts(stored)) == "Once upon a time."
    progress = [t for m in stored["history"] for t in texts(m)]
    assert "Reading the question" in progress and "Half-way" in progress
    assert status_text(stored) == "Written."


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_ndjson_events_are_applied_as_each_line_arrives(
    async_caller: AsyncCaller, remote: Agent, backend: Backend
) -> None:
    go_on = threading.Event()
    backend.queue(Answer([
        {"status": "Reading the question"},
        {"artifact": {"name": "essay", "text": "Once upon a time.", "lastChunk": True}},
        {"state": "completed", "message": "Written."},
    ], content_type="application/x-ndjson", pause=go_on))  # fmt: skip
    try:
        task = await async_caller.send("remote", V1, configuration={"returnImmediately": True})
        # The backend has sent its first line only, and waits: the update must be stored now.
        early = await async_caller.wait_for(
            "remote", task["id"], lambda t: status_text(t) == "Reading the question", timeout=5
        )
        assert status_text(early) == "Reading the question"
        assert state_of(early) == "working"
        assert early.get("artifacts", []) == []
        assert not go_on.is_set()
    finally:
        go_on.set()

    done = await async_caller.wait_for("remote", task["id"], is_terminal, timeout=5)

    assert state_of(done) == "completed"
    assert status_text(done) == "Written."
    assert artifact_texts(done) == ["Once upon a time."]
    assert len(backend.received) == 1


@both_versions
def test_a_stream_broken_after_its_first_events_fails_without_a_retry(
    caller: Caller, remote: Agent, backend: Backend, version: str
) -> None:
    backend.queue(Answer([{"status": "Starting"}, {"artifact": {"text": "half"}}],
                         content_type="application/x-ndjson", missing=100))  # fmt: skip

    task = caller.send("remote", version)

    assert state_of(task) == "failed"
    assert "The backend call failed" in status_text(task)
    assert len(backend.received) == 1  # events were applied already: never retried
    stored = caller.get("remote", version, task["id"])
    assert artifact_texts(stored) == ["half"]  # what arrived before the break stays


# -- the request -----------------------------------------------------------------------------


@both_versions
def test_the_request_carries_the_message_and_a_signature_that_binds_the_body(
    caller: Caller, remote: Agent, backend: Backend, client: Client, version: str
) -> None:
    task = caller.send("remote", version, text="check me",
                       message={"metadata": {"skillId": "remote-skill-0"}})  # fmt: skip

    received = backend.received[0]
    body = received.json()
    assert body["taskId"] == task["id"]
    assert body["contextId"] == task["contextId"]
    assert body["protocolVersion"] == version
    assert body["skill"] == "remote-skill-0"
    assert body["message"]["role"] == "ROLE_USER"
    assert texts(body["message"]) == ["check me"]
    assert [texts(m) for m in body["history"]] == [["check me"]]
    keys = jwk.JWKSet.from_json(client.get("/.well-known/jwks.json").content.decode())
    token = jwt.JWT(jwt=received.headers["A2A-Hub-Signature"], key=keys, algs=["ES256"])
    claims = json.loads(token.claims)
    assert claims["request_body_sha256"] == hashlib.sha256(received.body).hexdigest()
    assert claims["task_id"] == task["id"]
    assert claims["exp"] > claims["iat"]
    assert claims["aud"] == backend.url


def test_a_signature_made_for_one_backend_does_not_verify_for_another(
    caller: Caller, remote: Agent, backend: Backend, client: Client
) -> None:
    caller.send("remote", V1, text="replay me")
    received = backend.received[0]
    token, keys = received.headers["A2A-Hub-Signature"], client.get("/.well-known/jwks.json")
    published = keys.json()["keys"]

    assert verify_delivery(token, received.body, published, audience=backend.url)["aud"]
    with pytest.raises(SignatureInvalid, match=re.escape("not 'https://other.example/a2a'")):
        verify_delivery(token, received.body, published, audience="https://other.example/a2a")


@pytest.mark.parametrize(("incoming", "outgoing"), [(None, "1"), ("3", "4")])
def test_the_backend_call_carries_one_hop_more_than_the_request_came_with(
    caller: Caller, remote: Agent, backend: Backend, incoming: str | None, outgoing: str
) -> None:
    headers = {"A2A-Hub-Hops": incoming} if incoming else None
    params = {"message": wire_message(V1, "hop")}

    answer = caller.rpc("remote", V1, "send", params, headers=headers)

    assert answer.status_code == 200 and "result" in answer.json(), answer.json()
    assert backend.received[0].headers["A2A-Hub-Hops"] == outgoing


# -- failures --------------------------------------------------------------------------------


@both_versions
def test_a_backend_failing_once_with_503_is_retried_and_completes(
    caller: Caller, remote: Agent, backend: Backend, version: str
) -> None:
    backend.queue(Answer({"error": "busy"}, status=503), Answer({"message": "Second time."}))

    task = caller.send("remote", version)

    assert state_of(task) == "completed"
    assert status_text(task) == "Second time."
    assert len(backend.received) == 2


@both_versions
def test_a_backend_that_is_down_fails_the_task_and_says_why(
    caller: Caller, backend: Backend, version: str
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/a2a"
    secured_agent("gone", "http", executor_settings={"url": url, "retries": 1})

    task = caller.send("gone", version)

    assert state_of(task) == "failed"
    assert "could not be reached" in status_text(task)
    assert "after 2 attempt(s)" in status_text(task)
    assert "Traceback" not in status_text(task)


@both_versions
def test_a_backend_still_failing_after_its_retries_fails_the_task(
    caller: Caller, remote: Agent, backend: Backend, version: str
) -> None:
    backend.queue(*[Answer({"error": "down"}, status=502)] * 2)

    task = caller.send("remote", version)

    assert state_of(task) == "failed"
    assert "HTTP 502" in status_text(task)


@both_versions
@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (Answer(b"<html>oops</html>", content_type="text/html"), "not JSON"),
        (Answer({"state": "finished"}), "unknown state"),
        (Answer({"artifacts": [{"name": "empty"}]}), 'no "text"'),
        (Answer({"error": "no such thing"}, status=404), "HTTP 404"),
        (Answer([{"status": "working"}], content_type="application/x-ndjson"), "final state"),
    ],
)
def test_an_invalid_reply_fails_the_task_and_says_why(
    caller: Caller, remote: Agent, backend: Backend, version: str, answer: Answer, reason: str
) -> None:
    backend.queue(answer)

    task = caller.send("remote", version)

    assert state_of(task) == "failed"
    assert reason in status_text(task)


# -- the form --------------------------------------------------------------------------------


def agent_form(executor_settings: dict[str, Any]) -> AgentForm:
    """The admin's form, filled from a model with default values."""
    agent = Agent(slug="backed", name="Backed", description="Calls a backend.",
                  executor_kind="http", executor_settings=executor_settings)  # fmt: skip
    data = {
        name: value
        for name, value in model_to_dict(agent, fields=list(AgentForm.base_fields)).items()
        if value not in (None, False, [], {})
    }
    # The settings as a script posts them: one raw JSON object, judged by the same rules.
    return AgentForm(data=data | {"executor_settings": json.dumps(executor_settings)})


@pytest.mark.parametrize(
    ("executor_settings", "error"),
    [
        ({}, "Name the backend"),
        ({"url": "http://10.1.2.3/a2a"}, "a private address"),
        ({"url": "http://127.0.0.1:9/a2a"}, "a loopback address"),
        ({"url": "ftp://backend.example.com/"}, "may not call"),
        ({"url": "https://backend.example.com/", "timeout": 0}, '"timeout"'),
        ({"url": "https://backend.example.com/", "retries": 9}, '"retries"'),
    ],
)
def test_the_form_refuses_an_http_agent_without_a_callable_url_or_with_bad_limits(
    executor_settings: dict[str, Any], error: str
) -> None:
    form = agent_form(executor_settings)

    assert not form.is_valid()
    messages = [item["message"] for item in form.errors.get_json_data()["executor_settings"]]
    assert error in " ".join(messages)


def test_the_form_accepts_an_http_agent_with_a_public_url(backend: Backend) -> None:
    form = agent_form({"url": "https://backend.example.com/a2a", "timeout": 5, "retries": 0})

    assert form.is_valid(), form.errors


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_canceling_tells_the_backend_and_stops_the_turn(
    async_caller: AsyncCaller, remote: Agent, backend: Backend
) -> None:
    backend.queue(Answer({"message": "Too late."}, delay=2.0))
    task = await async_caller.send("remote", V1, configuration={"returnImmediately": True})
    await until(lambda: len(backend.received) == 1)

    canceled = await async_caller.result("remote", V1, "cancel", {"id": task["id"]})

    assert state_of(canceled) == "canceled"
    await until(lambda: len(backend.received) == 2 and task["id"] not in runner.RUNNING)
    assert backend.received[1].json() == {"cancel": task["id"]}
    assert "A2A-Hub-Signature" in backend.received[1].headers
    stored = await async_caller.get("remote", task["id"])
    assert state_of(stored) == "canceled"
    assert stored.get("artifacts", []) == []


async def until(condition: Callable[[], bool], timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert condition()


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@both_versions
async def test_a_backends_ndjson_reaches_a_streaming_client_as_events(
    async_caller: AsyncCaller, remote: Agent, backend: Backend, version: str
) -> None:
    backend.queue(Answer([
        {"status": "Reading the question"},
        {"artifact": {"name": "essay", "text": "Once "}},
        {"artifact": {"text": "upon a time.", "lastChunk": True}},
        {"state": "completed", "message": "Written."},
    ], content_type="application/x-ndjson"))  # fmt: skip
    body = envelope(version, "send", text="write")
    body["method"] = "SendStreamingMessage" if version == V1 else "message/stream"
    headers = {"X-API-Key": async_caller.key or ""} | ({"A2A-Version": V1} if version == V1 else {})

    response = await async_caller.client.post(
        "/agents/remote/jsonrpc/", data=json.dumps(body), content_type="application/json",
        headers=headers,
    )  # fmt: skip
    text = b"".join([chunk async for chunk in response.streaming_content]).decode()
    results = [json.loads(line[6:])["result"] for line in text.splitlines()
               if line.startswith("data: ")]  # fmt: skip

    updates = [r.get("artifactUpdate", r) for r in results if "artifact" in r.get(
        "artifactUpdate", r)]  # fmt: skip
    assert [p["text"] for u in updates for p in u["artifact"]["parts"]] == ["Once ", "upon a time."]
    assert [u.get("append", False) for u in updates] == [False, True]
    last = results[-1].get("statusUpdate", results[-1])
    assert last["status"]["state"] in ("completed", "TASK_STATE_COMPLETED")
