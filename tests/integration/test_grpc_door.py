"""The gRPC binding on the distributed hub: the official a2a-sdk client finds the GRPC
interface on an agent's card (its web process lists the hub's `rungrpc` process, naming the
agent by `tenant`) and does through it what it does through the other doors: send (blocking
and streamed), get, list, cancel, subscribe, push configs; with the agent's credentials as
metadata; refused calls come back as gRPC statuses whose ErrorInfo the client turns into the
same typed errors."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from typing import Any

import grpc
import httpx
import pytest
from a2a.client import ClientCallContext
from a2a.client.auth.credentials import CredentialService
from a2a.client.auth.interceptor import AuthInterceptor
from a2a.client.errors import A2AClientError
from a2a.types import a2a_pb2 as pb
from a2a.types import a2a_pb2_grpc
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError
from a2a.utils.grpc_status import status_from_call
from google.rpc import error_details_pb2

from tests.factories.messages import user_message
from tests.helpers import ROOT
from tests.integration.applications import application
from tests.integration.clients import (
    GRPC,
    TERMINAL,
    Door,
    a2a_client,
    get,
    send,
    texts,
    wait_for_state,
)
from tests.integration.stack import Hub

pytestmark = pytest.mark.integration

WEBHOOK = "https://receiver.example.com/hooks/grpc"


def card_of(hub: Hub, slug: str) -> dict[str, Any]:
    answer = httpx.get(f"{hub.web_a}/agents/{slug}/.well-known/agent-card.json",
                       headers={"A2A-Version": "1.0"})  # fmt: skip
    card: dict[str, Any] = answer.json()
    return card


def test_every_card_lists_the_hubs_grpc_service_naming_its_agent(hub: Hub) -> None:
    for slug in ("echo", "secure"):
        listed = [i for i in card_of(hub, slug)["supportedInterfaces"]
                  if i["protocolBinding"] == "GRPC" and i["protocolVersion"] == "1.0"]  # fmt: skip
        assert listed == [{"url": hub.grpc, "protocolBinding": "GRPC", "tenant": slug,
                           "protocolVersion": "1.0"}]  # fmt: skip


GRPC_03 = Door("0.3", "GRPC")


def test_the_default_agent_alone_offers_the_03_grpc_service(hub: Hub) -> None:
    """0.3 requests cannot name an agent: the 0.3 service serves HUB_DEFAULT_AGENT (echo)."""
    interfaces = card_of(hub, "echo")["supportedInterfaces"]
    listed = [(i["protocolVersion"], i.get("tenant", "")) for i in interfaces
              if i["protocolBinding"] == "GRPC"]  # fmt: skip
    assert listed == [("1.0", "echo"), ("0.3", "")]
    others = [i for i in card_of(hub, "interview")["supportedInterfaces"]
              if i["protocolBinding"] == "GRPC" and i["protocolVersion"] == "0.3"]  # fmt: skip
    assert others == []


def test_a_03_client_sends_streams_and_reads_through_the_03_grpc_service(hub: Hub) -> None:
    async def scenario() -> tuple[pb.Task, list[Any], pb.Task]:
        async with a2a_client(hub.web_a, "echo", *GRPC_03) as client:
            sent = await send(client, user_message("hello over 0.3 gRPC"))
            again = await get(client, sent.id)
        async with a2a_client(hub.web_b, "echo", *GRPC_03, streaming=True) as streamer:
            request = pb.SendMessageRequest(message=user_message("streamed over 0.3 gRPC"))
            events = [event async for event in streamer.send_message(request)]
        return sent, events, again

    sent, events, again = asyncio.run(scenario())
    assert sent.status.state == pb.TASK_STATE_COMPLETED
    assert [texts(a.parts) for a in sent.artifacts] == [["hello over 0.3 gRPC"]]
    assert again.id == sent.id
    [(version, binding)] = hub.query(
        "SELECT protocol_version, binding FROM tasks_task WHERE id = %s", (sent.id,)
    )
    assert (version, binding) == ("0.3", "GRPC")
    assert events[-1].status_update.status.state == pb.TASK_STATE_COMPLETED

    async def unknown() -> None:
        async with a2a_client(hub.web_a, "echo", *GRPC_03) as client:
            await get(client, "no-such-task")

    with pytest.raises(TaskNotFoundError):
        asyncio.run(unknown())


def test_a_blocking_send_then_get_and_list_through_grpc(hub: Hub) -> None:
    async def scenario() -> tuple[pb.Task, pb.Task, pb.ListTasksResponse]:
        async with a2a_client(hub.web_a, "echo", *GRPC) as client:
            sent = await send(client, user_message("hello over gRPC"))
            again = await get(client, sent.id)
            listed = await client.list_tasks(pb.ListTasksRequest(context_id=sent.context_id))
        return sent, again, listed

    sent, again, listed = asyncio.run(scenario())
    assert sent.status.state == pb.TASK_STATE_COMPLETED
    assert [texts(a.parts) for a in sent.artifacts] == [["hello over gRPC"]]
    assert again.id == sent.id and again.status.state == pb.TASK_STATE_COMPLETED
    assert [t.id for t in listed.tasks] == [sent.id]
    # The task remembers the door it came through, as the console shows it.
    assert hub.query("SELECT binding FROM tasks_task WHERE id = %s", (sent.id,)) == [("GRPC",)]


def grpc_sends_counted(metrics: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
               if line.startswith("a2ahub_requests_total{") and 'binding="grpc"' in line
               and 'method="SendMessage"' in line and 'agent="echo"' in line)  # fmt: skip


def test_the_grpc_process_serves_its_own_request_metrics(hub: Hub) -> None:
    before = grpc_sends_counted(httpx.get(hub.grpc_metrics, timeout=10).text)

    async def scenario() -> None:
        async with a2a_client(hub.web_a, "echo", *GRPC) as client:
            await send(client, user_message("count me"))

    asyncio.run(scenario())

    scraped = httpx.get(hub.grpc_metrics, timeout=10)
    assert scraped.status_code == 200
    assert scraped.headers["content-type"].startswith("text/plain; version=")
    assert grpc_sends_counted(scraped.text) == before + 1
    # The web processes count only their own requests: this one is nowhere else.
    assert grpc_sends_counted(httpx.get(f"{hub.web_a}/metrics", timeout=10).text) == 0
    assert httpx.get(hub.grpc_metrics.replace("/metrics", "/"), timeout=10).status_code == 404


def test_a_streamed_send_yields_the_turns_events_to_its_end(hub: Hub) -> None:
    async def scenario() -> list[Any]:
        async with a2a_client(hub.web_a, "echo", *GRPC, streaming=True) as client:
            request = pb.SendMessageRequest(message=user_message("streamed over gRPC"))
            return [event async for event in client.send_message(request)]

    events = asyncio.run(scenario())
    kinds = [event.WhichOneof("payload") for event in events]
    assert kinds[0] == "task" and "artifact_update" in kinds
    last = events[-1]
    assert last.WhichOneof("payload") == "status_update"
    assert last.status_update.status.state == pb.TASK_STATE_COMPLETED
    artifact = next(e.artifact_update for e in events if e.HasField("artifact_update"))
    assert texts(artifact.artifact.parts) == ["streamed over gRPC"]


def test_a_worker_turn_is_followed_by_subscribing_and_canceled_through_grpc(hub: Hub) -> None:
    async def scenario() -> tuple[list[Any], pb.Task]:
        async with a2a_client(hub.web_a, "slow", *GRPC) as starter:
            started = await send(starter, user_message("30"), immediately=True)
            assert started.status.state not in TERMINAL
            await wait_for_state(starter, started.id, {pb.TASK_STATE_WORKING}, 20)
        async with a2a_client(hub.web_b, "slow", *GRPC, streaming=True) as client:
            stream = client.subscribe(pb.SubscribeToTaskRequest(id=started.id))
            first = await anext(stream)
            canceled = await client.cancel_task(pb.CancelTaskRequest(id=started.id))
            rest = [event async for event in stream]
        return [first, *rest], canceled

    events, canceled = asyncio.run(scenario())
    assert events[0].WhichOneof("payload") == "task"
    assert events[0].task.status.state == pb.TASK_STATE_WORKING
    assert canceled.status.state == pb.TASK_STATE_CANCELED
    assert events[-1].status_update.status.state == pb.TASK_STATE_CANCELED


def test_push_configs_are_created_read_listed_and_deleted_through_grpc(hub: Hub) -> None:
    async def scenario() -> tuple[Any, ...]:
        async with a2a_client(hub.web_a, "tck", *GRPC) as client:
            message = user_message("configure me")
            message.message_id = "tck-input-required-grpc"
            asked = await send(client, message)
            config = pb.TaskPushNotificationConfig(task_id=asked.id, id="grpc-hook", url=WEBHOOK)
            made = await client.create_task_push_notification_config(config)
            read = await client.get_task_push_notification_config(
                pb.GetTaskPushNotificationConfigRequest(task_id=asked.id, id="grpc-hook")
            )
            listed = await client.list_task_push_notification_configs(
                pb.ListTaskPushNotificationConfigsRequest(task_id=asked.id)
            )
            await client.delete_task_push_notification_config(
                pb.DeleteTaskPushNotificationConfigRequest(task_id=asked.id, id="grpc-hook")
            )
            after = await client.list_task_push_notification_configs(
                pb.ListTaskPushNotificationConfigsRequest(task_id=asked.id)
            )
        return asked, made, read, listed, after

    asked, made, read, listed, after = asyncio.run(scenario())
    assert asked.status.state == pb.TASK_STATE_INPUT_REQUIRED
    assert (made.id, made.task_id, made.url) == ("grpc-hook", asked.id, WEBHOOK)
    assert (read.id, read.url) == ("grpc-hook", WEBHOOK)
    assert [c.id for c in listed.configs] == ["grpc-hook"]
    assert list(after.configs) == []


def test_an_unknown_task_is_not_found_with_its_error_info(hub: Hub) -> None:
    async def through_the_client() -> None:
        async with a2a_client(hub.web_a, "echo", *GRPC) as client:
            await get(client, "no-such-task")

    with pytest.raises(TaskNotFoundError):
        asyncio.run(through_the_client())

    call = asyncio.run(raw_call(hub, pb.GetTaskRequest(tenant="echo", id="no-such-task")))
    assert call.code() == grpc.StatusCode.NOT_FOUND
    info = error_info(call)
    assert (info.reason, info.domain) == ("TASK_NOT_FOUND", "a2a-protocol.org")


def test_canceling_a_finished_task_is_refused_as_not_cancelable(hub: Hub) -> None:
    async def scenario() -> None:
        async with a2a_client(hub.web_a, "echo", *GRPC) as client:
            done = await send(client, user_message("done already"))
            await client.cancel_task(pb.CancelTaskRequest(id=done.id))

    with pytest.raises(TaskNotCancelableError):
        asyncio.run(scenario())


def test_bad_input_is_an_invalid_argument_never_unknown(hub: Hub) -> None:
    call = asyncio.run(raw_call(hub, pb.GetTaskRequest(tenant="no-such-agent", id="t")))
    assert call.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_info(call).reason == "INVALID_PARAMS"
    nothing = asyncio.run(raw_bytes(hub, b"\xff\xff\xff"))
    assert nothing.code() == grpc.StatusCode.INVALID_ARGUMENT
    unsent = asyncio.run(raw_call(hub, pb.SendMessageRequest(tenant="echo")))
    assert unsent.code() == grpc.StatusCode.INVALID_ARGUMENT


class Token(CredentialService):
    def __init__(self, token: str) -> None:
        self.token = token

    async def get_credentials(self, security_scheme_name: str, context: Any) -> str | None:
        return self.token


def test_an_oauth2_agent_takes_a_bearer_token_as_metadata_and_refuses_calls_without(
    hub: Hub,
) -> None:
    client_id, secret = application(hub, "grpc robot")
    answer = httpx.post(f"{hub.web_a}/o/token/", data={"grant_type": "client_credentials"},
                        auth=(client_id, secret))  # fmt: skip
    token = answer.json()["access_token"]

    async def with_token() -> pb.Task:
        interceptors = [AuthInterceptor(Token(token))]
        async with a2a_client(hub.web_a, "secure", *GRPC, interceptors=interceptors) as client:
            return await send(client, user_message("secured over gRPC"))

    task = asyncio.run(with_token())
    assert [texts(a.parts) for a in task.artifacts] == [["secured over gRPC"]]

    async def without() -> None:
        async with a2a_client(hub.web_a, "secure", *GRPC) as client:
            await send(client, user_message("no token"))

    with pytest.raises(A2AClientError, match="UNAUTHENTICATED"):
        asyncio.run(without())
    call = asyncio.run(raw_call(hub, pb.GetTaskRequest(tenant="secure", id=task.id)))
    assert call.code() == grpc.StatusCode.UNAUTHENTICATED
    assert dict(call.trailing_metadata())["www-authenticate"].startswith("Bearer")


MAKE_KEY = """
import django, sys; django.setup()
from django.contrib.auth.models import User
from agents.models import ApiKey
owner = User.objects.create_user(sys.argv[1])
print(ApiKey.issue(sys.argv[1] + "'s key", owner=owner)[1])
"""


def test_an_api_key_in_metadata_makes_the_caller_who_owns_the_task(hub: Hub) -> None:
    name = f"grpc-{time.time_ns()}"
    done = subprocess.run([sys.executable, "-c", MAKE_KEY, name], cwd=ROOT, env=hub.env,
                          capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    key = done.stdout.split()[-1]
    keyed = ClientCallContext(service_parameters={"X-API-Key": key})

    async def scenario() -> tuple[pb.Task, pb.Task]:
        async with a2a_client(hub.web_a, "echo", *GRPC) as client:
            request = pb.SendMessageRequest(message=user_message("mine alone"))
            replies = [reply async for reply in client.send_message(request, context=keyed)]
            mine = replies[0].task
            seen = await client.get_task(pb.GetTaskRequest(id=mine.id), context=keyed)
        return mine, seen

    mine, seen = asyncio.run(scenario())
    assert seen.id == mine.id
    # Anyone else (here, a caller without the key) finds no such task.
    call = asyncio.run(raw_call(hub, pb.GetTaskRequest(tenant="echo", id=mine.id)))
    assert call.code() == grpc.StatusCode.NOT_FOUND
    [(owner,)] = hub.query("SELECT owner FROM tasks_task WHERE id = %s", (mine.id,))
    assert owner.startswith("user:")


async def raw_call(hub: Hub, request: Any) -> Any:
    """The call's outcome through the SDK's generated stub: its status and trailers."""
    method = {pb.GetTaskRequest: "GetTask", pb.SendMessageRequest: "SendMessage"}[type(request)]
    async with grpc.aio.insecure_channel(hub.grpc) as channel:
        call = getattr(a2a_pb2_grpc.A2AServiceStub(channel), method)(
            request, metadata=[("a2a-version", "1.0")]
        )
        try:
            await call
        except grpc.aio.AioRpcError as exc:
            return exc
    raise AssertionError(f"{method} was not refused")


async def raw_bytes(hub: Hub, raw: bytes) -> Any:
    async with grpc.aio.insecure_channel(hub.grpc) as channel:
        try:
            await channel.unary_unary("/lf.a2a.v1.A2AService/GetTask")(raw)
        except grpc.aio.AioRpcError as exc:
            return exc
    raise AssertionError("bytes that are no request were answered")


def error_info(call: Any) -> error_details_pb2.ErrorInfo:
    status = status_from_call(call)
    assert status is not None
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    return info
