"""Traces on the distributed hub, exported over OTLP/HTTP to a real receiver on 127.0.0.1: one
call is one trace across the door, the task write, the Celery hop and every sub-call; the
caller's `traceparent` is its parent; HTTP backends and webhook receivers are sent the same
trace's `traceparent`; gRPC calls (1.0 and 0.3, sent and streamed) and MCP tool calls are
traced alike; JSON log lines carry the trace's ids."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import httpx2
import pytest
from a2a.compat.v0_3 import a2a_v0_3_pb2 as pb03
from a2a.compat.v0_3 import a2a_v0_3_pb2_grpc as grpc03
from a2a.types import a2a_pb2 as pb
from a2a.types import a2a_pb2_grpc
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.helpers import ROOT, answering_posts, eventually, free_port, wait_for_http
from tests.integration.otlp_receiver import OtlpReceiver, Span
from tests.integration.stack import Hub, hub_of_its_own
from tests.push.receiver import Behaviour, Receiver

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

TIMEOUT = 60.0
# The orchestrator and toolbox run on workers, so the orchestrator's turn crosses the Celery
# hop and its sub-call to toolbox crosses it again; `backend` hands its turns to an HTTP
# backend of the test's.
PREPARE = """
import django, sys; django.setup()
from agents.models import Agent, Skill
for slug in ("orchestrator", "toolbox"):
    agent = Agent.objects.get(slug=slug)
    agent.execution_mode = "worker"
    agent.save()
agent, _ = Agent.objects.update_or_create(slug="backend", defaults=dict(
    name="Backend", description="an HTTP backend", executor_kind="http",
    executor_settings={"url": sys.argv[1], "retries": 0}, push_notifications=True))
Skill.objects.get_or_create(agent=agent, skill_id="any", defaults=dict(
    name="Any", description="anything"))
"""


class Backend:
    """An HTTP backend on 127.0.0.1 that completes every turn and keeps the headers it got."""

    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []
        self.server = answering_posts(self.turn)

    def turn(self, headers: dict[str, str], body: bytes) -> tuple[str, bytes]:
        self.headers.append(headers)
        return "application/json", json.dumps({"state": "completed", "message": "Done."}).encode()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/turn"


@pytest.fixture(scope="module")
def otlp() -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver()
    yield receiver
    receiver.stop()


@pytest.fixture(scope="module")
def backend() -> Iterator[Backend]:
    started = Backend()
    yield started
    started.server.shutdown()


@pytest.fixture(scope="module")
def hub(
    otlp: OtlpReceiver, backend: Backend, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Hub]:
    """A hub of its own exporting to the receiver, with one more web process at the hub's
    public URL (where the orchestrator, on a worker, sends its sub-calls)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    settings = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url,
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "PUBLIC_BASE_URL": base,
        "OUTBOUND_ALLOWED_HOSTS": "127.0.0.1",
        "LOG_FORMAT": "json",
    }
    root: Path = tmp_path_factory.mktemp("tracing-hub")
    with hub_of_its_own("a2ahub_tracing", root, settings) as running:
        subprocess.run([sys.executable, "-c", PREPARE, backend.url], cwd=ROOT, env=running.env,
                       check=True, timeout=60)  # fmt: skip
        command = [sys.executable, "-m", "a2ahub.daphne", "-b", "127.0.0.1", "-p", str(port)]
        public = running.spawn("web-public", [*command, "a2ahub.asgi:application"])
        wait_for_http(f"{base}/agents/orchestrator/.well-known/agent-card.json", public.popen)
        running.more_web.append(base)
        yield running


def new_traceparent() -> tuple[str, str, str]:
    trace_id, span_id = os.urandom(16).hex(), os.urandom(8).hex()
    return f"00-{trace_id}-{span_id}-01", trace_id, span_id


def rpc(base: str, slug: str, params: dict[str, Any], traceparent: str) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
    response = httpx.post(f"{base}/agents/{slug}/jsonrpc/", json=body, timeout=TIMEOUT,
                          headers={"A2A-Version": "1.0", "traceparent": traceparent})  # fmt: skip
    answer: dict[str, Any] = response.json()
    assert "result" in answer, answer
    return answer["result"]


def message(text: str) -> dict[str, Any]:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}


def doors(spans: list[Span]) -> list[Span]:
    return [s for s in spans if s.kind == "SERVER" and "a2a.method" in s.attributes]


def test_one_send_to_the_orchestrator_is_one_trace_across_every_hop(
    hub: Hub, otlp: OtlpReceiver
) -> None:
    traceparent, trace_id, caller_span = new_traceparent()

    public = hub.more_web[0]
    task = rpc(public, "orchestrator", {"message": message("stressed")}, traceparent)["task"]

    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    sub_tasks = task["status"]["message"]["referenceTaskIds"]

    def complete() -> bool:
        spans = otlp.of_trace(trace_id)
        agents = {s.attributes.get("a2a.agent") for s in doors(spans)}
        runs = [s for s in spans if s.name == "run/tasks.run_task"]
        return agents >= {"orchestrator", "echo", "toolbox"} and len(runs) >= 2

    assert eventually(complete, timeout=30), otlp.of_trace(trace_id)
    spans = otlp.of_trace(trace_id)
    by_id = {s.span_id: s for s in spans}
    door = next(s for s in doors(spans) if s.attributes["a2a.agent"] == "orchestrator")
    assert door.parent_id == caller_span  # the caller's span is the trace's parent
    assert door.name == "A2A SendMessage"
    assert door.service == "a2a-hub"
    assert {k: door.attributes.get(k) for k in (
        "a2a.method", "a2a.binding", "a2a.version", "a2a.agent", "a2a.task.id",
        "a2a.context.id", "a2a.task.state", "gen_ai.operation.name", "gen_ai.agent.name",
        "http.response.status_code",
    )} == {
        "a2a.method": "SendMessage", "a2a.binding": "jsonrpc", "a2a.version": "1.0",
        "a2a.agent": "orchestrator", "a2a.task.id": task["id"],
        "a2a.context.id": task["contextId"], "a2a.task.state": "TASK_STATE_COMPLETED",
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "orchestrator",
        "http.response.status_code": 200,
    }  # fmt: skip
    assert door.attributes["gen_ai.agent.id"]

    def ancestors(span: Span) -> list[str]:
        names = []
        while span.parent_id in by_id:
            span = by_id[span.parent_id]
            names.append(span.name)
        return names

    # The door's task write and the queueing of the worker's turn, children of the door.
    writes = [s for s in spans if s.name == "a2a.task.write"
              and s.attributes["a2a.task.id"] == task["id"]]  # fmt: skip
    assert writes and any(by_id.get(w.parent_id) is door for w in writes)
    queued = next(s for s in spans if s.name == "a2a.turn.queue"
                  and s.attributes["a2a.task.id"] == task["id"])  # fmt: skip
    assert queued.kind == "PRODUCER" and queued.parent_id == door.span_id
    # The turn ran on a worker (another process), as a child of the queueing.
    run = next(s for s in spans if s.name == "run/tasks.run_task" and s.parent_id == queued.span_id)
    assert run.kind == "CONSUMER"
    executor = next(s for s in spans if s.name == "a2a.executor orchestrator")
    assert executor.parent_id == run.span_id
    assert executor.attributes["gen_ai.operation.name"] == "invoke_agent"
    # Each sub-call: an outbound HTTP call from the executor, the sub-agent's door below it.
    for slug, sub_task in zip(["echo", "toolbox"], sub_tasks, strict=True):
        sub_door = next(s for s in doors(spans) if s.attributes["a2a.agent"] == slug)
        assert sub_door.attributes["a2a.task.id"] == sub_task
        outbound = by_id[sub_door.parent_id]
        assert outbound.kind == "CLIENT"
        assert "a2a.executor orchestrator" in ancestors(outbound)
    # toolbox runs on a worker too: its turn crossed the Celery hop within the same trace.
    toolbox_door = next(s for s in doors(spans) if s.attributes["a2a.agent"] == "toolbox")
    assert any(s.name == "run/tasks.run_task" and toolbox_door.name in ancestors(s)
               for s in spans)  # fmt: skip
    # Log lines written while serving the call carry its trace id.
    logs = "".join(p.read_text(errors="replace") for p in hub.logs.glob("*.log"))
    assert f'"trace_id":"{trace_id}"' in logs


def test_a_backend_and_a_webhook_receiver_are_sent_the_calls_trace(
    hub: Hub, otlp: OtlpReceiver, backend: Backend
) -> None:
    webhook = Receiver(Behaviour())
    try:
        traceparent, trace_id, _ = new_traceparent()
        config = {"taskPushNotificationConfig": {"url": webhook.url, "token": "t"}}
        params = {"message": message("hi"), "configuration": config}

        task = rpc(hub.web_a, "backend", params, traceparent)["task"]

        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
        sent = [h["traceparent"] for h in backend.headers if trace_id in h.get("traceparent", "")]
        assert len(sent) == 1
        received = webhook.wait_for(1, timeout=30)[0].header("traceparent")
        assert received.split("-")[1] == trace_id
        assert eventually(lambda: any(s.name == "a2a.push.deliver"
                                      for s in otlp.of_trace(trace_id)), timeout=30)  # fmt: skip
    finally:
        webhook.down()


def test_a_grpc_call_is_traced_the_same_way(hub: Hub, otlp: OtlpReceiver) -> None:
    traceparent, trace_id, caller_span = new_traceparent()
    sent = pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER, parts=[pb.Part(text="hi")])
    request = pb.SendMessageRequest(tenant="echo", message=sent)
    with grpc.insecure_channel(hub.grpc) as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        answer = stub.SendMessage(request, metadata=[("traceparent", traceparent)], timeout=TIMEOUT)

    def door() -> Span | None:
        return next(iter(doors(otlp.of_trace(trace_id))), None)

    assert eventually(lambda: door() is not None, timeout=30)
    span = door()
    assert span is not None and span.parent_id == caller_span
    assert span.name == "A2A SendMessage"
    assert span.attributes["a2a.binding"] == "grpc"
    assert span.attributes["a2a.agent"] == "echo"
    assert span.attributes["a2a.task.id"] == answer.task.id
    assert span.attributes["a2a.task.state"] == "TASK_STATE_COMPLETED"
    assert span.attributes["rpc.grpc.status_code"] == "OK"


def test_03_grpc_calls_sent_and_streamed_are_traced_as_10_ones_are(
    hub: Hub, otlp: OtlpReceiver
) -> None:
    sent_parent, sent_trace, sent_caller = new_traceparent()
    streamed_parent, streamed_trace, streamed_caller = new_traceparent()

    def message_03(text: str) -> pb03.Message:
        return pb03.Message(message_id=uuid.uuid4().hex, role=pb03.ROLE_USER,
                            content=[pb03.Part(text=text)])  # fmt: skip

    with grpc.insecure_channel(hub.grpc) as channel:
        stub = grpc03.A2AServiceStub(channel)
        answer = stub.SendMessage(
            pb03.SendMessageRequest(request=message_03("hi")),
            metadata=[("traceparent", sent_parent)], timeout=TIMEOUT,
        )  # fmt: skip
        events = list(stub.SendStreamingMessage(
            pb03.SendMessageRequest(request=message_03("streamed")),
            metadata=[("traceparent", streamed_parent)], timeout=TIMEOUT,
        ))  # fmt: skip

    assert answer.task.status.state == pb03.TASK_STATE_COMPLETED
    assert events[-1].status_update.status.state == pb03.TASK_STATE_COMPLETED

    def door_of(trace_id: str) -> Span | None:
        return next(iter(doors(otlp.of_trace(trace_id))), None)

    assert eventually(lambda: door_of(sent_trace) and door_of(streamed_trace), timeout=30)
    sent_door, streamed_door = door_of(sent_trace), door_of(streamed_trace)
    assert sent_door is not None and streamed_door is not None
    assert (sent_door.parent_id, streamed_door.parent_id) == (sent_caller, streamed_caller)
    assert (sent_door.name, streamed_door.name) == ("A2A SendMessage", "A2A SendStreamingMessage")
    for door in (sent_door, streamed_door):
        assert door.attributes["a2a.binding"] == "grpc"
        assert door.attributes["a2a.version"] == "0.3"
        assert door.attributes["a2a.agent"] == "echo"
        assert door.attributes["rpc.grpc.status_code"] == "OK"
    assert sent_door.attributes["a2a.task.id"] == answer.task.id
    assert sent_door.attributes["a2a.task.state"] == "TASK_STATE_COMPLETED"
    # The stream's span lasts as long as the stream: its task's write happened within it.
    write = next(s for s in otlp.of_trace(streamed_trace) if s.name == "a2a.task.write")
    assert write.parent_id == streamed_door.span_id


def test_an_mcp_tool_call_is_a_span_of_the_callers_trace(hub: Hub, otlp: OtlpReceiver) -> None:
    traceparent, trace_id, caller_span = new_traceparent()

    async def call() -> Any:
        async with (
            httpx2.AsyncClient(headers={"traceparent": traceparent}, timeout=TIMEOUT) as http,
            streamable_http_client(f"{hub.web_a}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as mcp,
        ):
            await mcp.initialize()
            return await mcp.call_tool("echo", {"message": "traced over MCP"})

    result = asyncio.run(call())

    assert result.is_error is False

    def by_method() -> dict[str, Span]:
        return {s.attributes["a2a.method"]: s for s in doors(otlp.of_trace(trace_id))}

    # The client lists the tools before it calls one (to read the tool's output schema).
    assert eventually(lambda: set(by_method()) == {"tools/list", "tools/call"}, timeout=30), (
        otlp.of_trace(trace_id)
    )
    listed, door = by_method()["tools/list"], by_method()["tools/call"]
    assert listed.parent_id == caller_span and listed.name == "A2A tools/list"
    assert "gen_ai.operation.name" not in listed.attributes  # it invokes no agent
    assert door.parent_id == caller_span
    assert door.name == "A2A tools/call"
    assert {k: door.attributes.get(k) for k in (
        "a2a.binding", "a2a.method", "mcp.method.name", "gen_ai.tool.name", "a2a.agent",
        "gen_ai.operation.name", "gen_ai.agent.name", "a2a.task.id", "a2a.task.state",
    )} == {
        "a2a.binding": "mcp", "a2a.method": "tools/call", "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "echo", "a2a.agent": "echo", "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "echo", "a2a.task.id": result.structured_content["taskId"],
        "a2a.task.state": "TASK_STATE_COMPLETED",
    }  # fmt: skip
    # The task's write and the agent's turn happened within the call.
    spans = {s.span_id: s for s in otlp.of_trace(trace_id)}

    def within_the_call(span: Span) -> bool:
        while span.parent_id in spans and span.parent_id != door.span_id:
            span = spans[span.parent_id]
        return span.parent_id == door.span_id

    inner = [s for s in spans.values() if s.name in ("a2a.task.write", "a2a.executor echo")]
    assert {s.name for s in inner} == {"a2a.task.write", "a2a.executor echo"}
    assert all(within_the_call(s) for s in inner)


def test_an_mcp_call_carrying_its_trace_in_meta_is_traced_below_the_mcp_servers_span(
    hub: Hub, otlp: OtlpReceiver
) -> None:
    traceparent, trace_id, caller_span = new_traceparent()
    # The HTTP request carries another trace (a proxy's, say): the message's own is followed.
    proxy = {"traceparent": new_traceparent()[0]}

    async def call() -> Any:
        async with (
            httpx2.AsyncClient(headers=proxy, timeout=TIMEOUT) as http,
            streamable_http_client(f"{hub.web_a}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as mcp,
        ):
            await mcp.initialize()
            return await mcp.call_tool("echo", {"message": "hi"}, meta={"traceparent": traceparent})

    assert asyncio.run(call()).is_error is False

    def calls() -> list[Span]:
        return [
            s for s in otlp.of_trace(trace_id) if s.name in ("tools/call echo", "A2A tools/call")
        ]

    assert eventually(lambda: len(calls()) == 2, timeout=30), otlp.of_trace(trace_id)
    by_name = {s.name: s for s in calls()}
    mcp_span, door = by_name["tools/call echo"], by_name["A2A tools/call"]
    assert mcp_span.parent_id == caller_span  # the MCP SDK's span continues `_meta`'s trace
    assert door.parent_id == mcp_span.span_id
    assert door.attributes["a2a.task.state"] == "TASK_STATE_COMPLETED"


def test_a_registry_search_is_a_span_of_the_callers_trace(hub: Hub, otlp: OtlpReceiver) -> None:
    traceparent, trace_id, caller_span = new_traceparent()

    found = httpx.get(f"{hub.web_a}/registry/agents?q=echo", timeout=TIMEOUT,
                      headers={"traceparent": traceparent})  # fmt: skip

    assert found.status_code == 200
    assert eventually(lambda: any(s.kind == "SERVER" for s in otlp.of_trace(trace_id)), timeout=30)
    span = next(s for s in otlp.of_trace(trace_id) if s.kind == "SERVER")
    assert span.parent_id == caller_span
    assert span.name == "GET /registry/agents"
    assert span.attributes["http.response.status_code"] == 200


def test_a_later_turn_links_to_the_call_that_made_the_task(hub: Hub, otlp: OtlpReceiver) -> None:
    first, first_trace, _ = new_traceparent()
    task = rpc(hub.web_a, "interview", {"message": message("hello")}, first)["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", task
    later, later_trace, _ = new_traceparent()
    answer = message("blue") | {"taskId": task["id"], "contextId": task["contextId"]}

    rpc(hub.web_a, "interview", {"message": answer}, later)

    def linked() -> list[Span]:
        return [s for s in doors(otlp.of_trace(later_trace))
                if any(trace == first_trace for trace, _ in s.links)]  # fmt: skip

    assert eventually(lambda: bool(linked()), timeout=30), otlp.of_trace(later_trace)
    assert linked()[0].attributes["a2a.task.id"] == task["id"]
