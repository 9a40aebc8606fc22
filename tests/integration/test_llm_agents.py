"""`llm` agents on the distributed hub, against an OpenAI-compatible server the tests start
on 127.0.0.1 (real HTTP, SSE `chat.completion.chunk` frames scripted per test) and a real MCP
server (the official SDK's, Streamable HTTP): the answer streams chunk by chunk, tools (a
hosted agent, an MCP tool) are called and their results reach the model, `ask_user` asks and
the reply continues the task, a turn's model calls share one connection, a cancel stops the
model's stream, usage is kept and counted, and each failure ends the task saying which and
why."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.integration.llm_agents import (
    answer_text,
    make_llm_agent,
    rpc,
    send,
    state,
    status_text,
    streamed,
)
from tests.integration.stack import Hub, hub_of_its_own
from tests.llm.mcp_server import McpTestServer
from tests.llm.model_server import Garbage, ModelServer, Silence, Status, Text, Tools

pytestmark = pytest.mark.integration

ANSWER_LIMIT = 2048
LLM_ENV = {"OUTBOUND_ALLOWED_HOSTS": "127.0.0.1", "LLM_MAX_ANSWER_BYTES": str(ANSWER_LIMIT)}
API_KEY = "sk-test-0123456789abcdef"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """A hub whose outbound calls may reach the test servers on loopback; named `hub` so a
    failing test's report carries its process logs."""
    with hub_of_its_own("a2ahub_llm", tmp_path_factory.mktemp("llm-hub"), LLM_ENV) as running:
        yield running


@pytest.fixture(scope="module")
def models() -> Iterator[ModelServer]:
    server = ModelServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def mcp_server() -> Iterator[McpTestServer]:
    server = McpTestServer().start()
    yield server
    server.stop()


def agent(hub: Hub, models: ModelServer, **settings: Any) -> tuple[str, str]:
    """A new llm agent with a model of its own; (slug, model)."""
    model = f"model-{uuid.uuid4().hex[:8]}"
    base = {"base_url": models.url, "model": model, "instructions": "Be brief.",
            "api_key": API_KEY, "timeout": 10}  # fmt: skip
    return make_llm_agent(hub, base | settings), model


def no_trace(text: str) -> None:
    assert "Traceback" not in text and API_KEY not in text, text


def test_the_answer_streams_chunk_by_chunk_and_usage_is_kept(hub: Hub, models: ModelServer) -> None:
    slug, model = agent(hub, models)
    gate = __import__("threading").Event()
    models.script(model, Text(["Hel", "lo ", "world"], gate=gate, usage=(11, 7)))

    chunks: list[tuple[str, bool]] = []
    final: dict[str, Any] = {}
    with streamed(hub.web_a, slug, "Say hello") as results:
        for result in results:
            if "artifactUpdate" in result:
                update = result["artifactUpdate"]
                text = "".join(p.get("text", "") for p in update["artifact"]["parts"])
                chunks.append((text, bool(update.get("append"))))
                # The model holds the rest until the first chunk reached the client.
                gate.set()
            if "statusUpdate" in result and state(result["statusUpdate"]) == "completed":
                final = result["statusUpdate"]

    assert chunks[:3] == [("Hel", False), ("lo ", True), ("world", True)], chunks
    # The last update replaces the chunks with the whole answer, which the task keeps as one part.
    assert chunks[3:] == [("Hello world", False)], chunks
    assert final, "the stream ended without the completed status"
    task = rpc(hub.web_b, slug, "GetTask", {"id": final["taskId"]})
    assert answer_text(task) == "Hello world"
    assert [len(a["parts"]) for a in task["artifacts"]] == [1]
    assert task["status"]["message"]["metadata"]["a2ahub/usage"] == {
        "model": model, "promptTokens": 11, "completionTokens": 7}  # fmt: skip
    request = models.seen[model][0]
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Say hello"},
    ]
    assert request.body["stream"] is True

    def counted() -> bool:
        metrics = httpx.get(f"{hub.web_b}/metrics", timeout=10).text
        line = f'a2ahub_llm_tokens_total{{agent="{slug}",kind="prompt",model="{model}"}} 11.0'
        return line in metrics

    deadline = time.monotonic() + 10
    while not counted():
        lines = [x for x in httpx.get(f"{hub.web_b}/metrics").text.splitlines() if "llm" in x]
        assert time.monotonic() < deadline, f"the tokens were not counted in /metrics: {lines}"
        time.sleep(0.2)


def test_an_agent_tool_and_an_mcp_tool_are_called_and_their_results_reach_the_model(
    hub: Hub, models: ModelServer, mcp_server: McpTestServer
) -> None:
    slug, model = agent(hub, models, agents=["echo"],
                        mcp_servers=[{"url": mcp_server.url, "token": "mcp-secret"}])  # fmt: skip
    models.script(
        model,
        Tools([("agent_echo", '{"message": "ping pong"}'), ("search", '{"query": "otters"}')]),
        Text(["Echo said ping pong; otters found."]),
    )

    statuses: list[str] = []
    with streamed(hub.web_a, slug, "Use your tools") as results:
        for result in results:
            if "statusUpdate" in result:
                statuses.append(status_text(result["statusUpdate"]))
                last = result["statusUpdate"]
    assert "calling agent echo" in statuses and "calling MCP tool search" in statuses, statuses
    assert state(last) == "completed"

    offered = {t["function"]["name"] for t in models.seen[model][0].body["tools"]}
    assert {"agent_echo", "search", "ask_user"} <= offered
    second = models.seen[model][1].body["messages"]
    tool_answers = [m["content"] for m in second if m["role"] == "tool"]
    assert tool_answers == ["ping pong", "found 3 pages about otters"], second
    assert "Bearer mcp-secret" in mcp_server.authorizations
    task = rpc(hub.web_b, slug, "GetTask", {"id": last["taskId"]})
    references = task["status"]["message"]["referenceTaskIds"]
    assert len(references) == 1
    owner = hub.query("SELECT owner FROM tasks_task WHERE id = %s", (references[0],))
    assert owner == [(f"agent:{slug}",)]


def test_bad_tool_arguments_are_answered_to_the_model_which_tries_again(
    hub: Hub, models: ModelServer, mcp_server: McpTestServer
) -> None:
    slug, model = agent(hub, models, mcp_servers=[{"url": mcp_server.url}])
    models.script(
        model,
        Tools([("search", "{not json")]),
        Tools([("search", '{"limit": 2}')]),
        Tools([("search", '{"query": "owls", "limit": 2}')]),
        Text(["Owls."]),
    )

    task = send(hub.web_a, slug, "Find owls")

    assert state(task) == "completed", task
    answers = [m["content"] for m in models.seen[model][3].body["messages"] if m["role"] == "tool"]
    assert answers[0].startswith("error: the arguments are not JSON"), answers
    assert answers[1].startswith("error:") and "query" in answers[1], answers
    assert answers[2] == "found 2 pages about owls"


def test_a_turns_model_calls_share_one_connection(hub: Hub, models: ModelServer) -> None:
    """Each tool round asks the model again; over TLS a new connection each time would cost a
    handshake each time."""
    slug, model = agent(hub, models, agents=["echo"])
    call = Tools([("agent_echo", '{"message": "again"}')])
    models.script(model, call, call, Text(["Echoed twice."]))
    before = models.connections

    task = send(hub.web_a, slug, "Echo twice")

    assert state(task) == "completed", task
    assert len(models.seen[model]) == 3
    assert models.connections - before == 1


def test_ask_user_asks_and_the_reply_continues_the_task(hub: Hub, models: ModelServer) -> None:
    slug, model = agent(hub, models)
    models.script(
        model, Tools([("ask_user", '{"question": "Which city?"}')]), Text(["Sunny in Paris."])
    )

    asked = send(hub.web_a, slug, "What is the weather?")
    assert state(asked) == "input_required", asked
    assert status_text(asked) == "Which city?"

    answered = send(hub.web_b, slug, "Paris", task_id=asked["id"])
    assert state(answered) == "completed", answered
    assert answered["id"] == asked["id"]
    assert answer_text(answered) == "Sunny in Paris."
    chat = models.seen[model][1].body["messages"]
    assert chat[1:] == [
        {"role": "user", "content": "What is the weather?"},
        {"role": "assistant", "content": "Which city?"},
        {"role": "user", "content": "Paris"},
    ], chat


def test_a_cancel_stops_the_model_stream(hub: Hub, models: ModelServer) -> None:
    slug, model = agent(hub, models)
    models.script(model, Text(["Thinking"], hold=True))

    with streamed(hub.web_a, slug, "Think long") as results:
        for result in results:
            if "artifactUpdate" in result:
                task_id = result["artifactUpdate"]["taskId"]
                canceled = rpc(hub.web_b, slug, "CancelTask", {"id": task_id})
                assert state(canceled) == "canceled"
                break

    assert models.hung_up[model].wait(10), "the hub did not hang up on the model server"


def test_a_cancel_while_a_hosted_agent_is_called_cancels_that_agents_task(
    hub: Hub, models: ModelServer
) -> None:
    slug, model = agent(hub, models, agents=["slow"])
    models.script(model, Tools([("agent_slow", '{"message": "work for 60 seconds"}')]))

    def called() -> list[tuple[Any, ...]]:
        return hub.query("SELECT id::text, state FROM tasks_task WHERE owner = %s",
                         (f"agent:{slug}",))  # fmt: skip

    with streamed(hub.web_a, slug, "Take your time") as results:
        for result in results:
            update = result.get("statusUpdate")
            if update and status_text(update) == "calling agent slow":
                deadline = time.monotonic() + 10
                while not [row for row in called() if row[1] == "working"]:
                    assert time.monotonic() < deadline, f"the call made no working task: {called()}"
                    time.sleep(0.1)
                canceled = rpc(hub.web_b, slug, "CancelTask", {"id": update["taskId"]})
                assert state(canceled) == "canceled"
                break

    deadline = time.monotonic() + 10
    while [row for row in called() if row[1] != "canceled"]:
        assert time.monotonic() < deadline, f"the called agent's task went on: {called()}"
        time.sleep(0.1)
    ((sub_task, _),) = called()
    (reason,) = hub.query("SELECT status_message FROM tasks_task WHERE id = %s", (sub_task,))
    assert "canceled while it waited" in str(reason), reason


def failed_with(hub: Hub, slug: str) -> str:
    task = send(hub.web_a, slug, "Hello")
    assert state(task) == "failed", task
    text = status_text(task)
    no_trace(text)
    return text


def test_a_model_server_error_fails_the_task_saying_so(hub: Hub, models: ModelServer) -> None:
    slug, model = agent(hub, models)
    body = f'{{"error": {{"message": "Incorrect API key provided: {API_KEY}"}}}}'
    models.script(model, Status(401, body))

    text = failed_with(hub, slug)

    assert f"The model server {models.url.removesuffix('/v1')}" in text
    assert "answered HTTP 401" in text and "[the API key]" in text


@pytest.mark.parametrize(
    "frame",
    [
        "data: this is not json\n\n",
        'data: {"choices": "not a list"}\n\n',
        'data: {"choices": [{"delta": {"content": 42}}]}\n\n',
        'data: {"choices": [{"delta": {"tool_calls": [{"function": {"name": "x"}}]}}]}\n\n',
    ],
    ids=["not-json", "choices-not-a-list", "content-not-text", "tool-call-without-index"],
)
def test_a_model_server_that_answers_garbage_fails_the_task(
    hub: Hub, models: ModelServer, frame: str
) -> None:
    slug, model = agent(hub, models)
    models.script(model, Garbage(frame))

    assert "not a Chat Completions stream" in failed_with(hub, slug)


def test_a_model_server_that_does_not_answer_in_time_fails_the_task(
    hub: Hub, models: ModelServer
) -> None:
    slug, model = agent(hub, models, timeout=1)
    models.script(model, Silence(4))

    assert "did not answer within 1 seconds" in failed_with(hub, slug)


def test_an_unreachable_model_server_fails_the_task(hub: Hub) -> None:
    slug = make_llm_agent(hub, {"base_url": "http://127.0.0.1:9/v1", "model": "m", "timeout": 5})

    assert "could not be reached" in failed_with(hub, slug)


def test_an_mcp_server_that_fails_fails_the_task(hub: Hub, models: ModelServer) -> None:
    slug, _ = agent(hub, models, mcp_servers=[{"url": "http://127.0.0.1:9/mcp"}])

    text = failed_with(hub, slug)

    assert re.search(r"The MCP server http://127\.0\.0\.1:9/mcp failed: ", text), text


def test_too_many_tool_rounds_fail_the_task(hub: Hub, models: ModelServer) -> None:
    slug, model = agent(hub, models, agents=["echo"], max_steps=1)
    call = Tools([("agent_echo", '{"message": "again"}')])
    models.script(model, call, call)

    assert "more than 1 times (max_steps)" in failed_with(hub, slug)


def test_an_answer_over_the_size_limit_fails_the_task(hub: Hub, models: ModelServer) -> None:
    slug, model = agent(hub, models)
    models.script(model, Text(["x" * 1500, "y" * 1500]))

    assert f"size limit of {ANSWER_LIMIT} bytes" in failed_with(hub, slug)
