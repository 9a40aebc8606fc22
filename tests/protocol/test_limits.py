"""Per-agent limits: rate per caller, concurrent tasks, body size and turn time, each refused
with a clear answer and counted where operators look."""

from __future__ import annotations

import re
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.test import Client
from django.urls import reverse

from agents.models import Agent
from tasks import writer
from tasks.changes import NewTask, StatusChange
from tasks.models import ExecutionMode, TaskState
from tests.factories.agents import secured_agent
from tests.factories.envelopes import envelope
from tests.factories.errors import hub_error
from tests.factories.messages import user_message
from tests.factories.versions import V03, V1
from tests.protocol.answers import error_info, state_of, texts
from tests.protocol.callers import Caller

pytestmark = pytest.mark.django_db
both_versions = pytest.mark.parametrize("version", [V03, V1])


def send(caller: Caller, slug: str, version: str, text: str = "hi") -> Any:
    return caller.rpc(slug, version, "send", text=text)


@both_versions
def test_a_caller_over_the_rate_gets_429_with_retry_after(
    caller: Caller, stranger: Caller, version: str
) -> None:
    agent = secured_agent("limited", requests_per_minute=2)

    assert [send(caller, "limited", version).status_code for _ in range(2)] == [200, 200]
    refused = send(caller, "limited", version)

    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    error = refused.json()["error"]
    assert error["code"] == -32004
    assert "2 requests per minute" in error["message"]
    assert re.fullmatch(
        r"This agent takes at most 2 requests per minute from you; try again in \d+ s\.",
        error["message"],
    )
    assert error == hub_error(
        version, -32004, error["message"], "UNSUPPORTED_OPERATION", limit=error["message"]
    )
    if version == V1:
        assert error_info(error)["reason"] == "UNSUPPORTED_OPERATION"
    assert send(stranger, "limited", version).status_code == 200  # each caller has its own count
    agent.refresh_from_db()
    assert agent.limit_hits == 1
    assert "requests per minute" in agent.last_limit_hit
    assert agent.last_limit_hit == "more than 2 requests per minute from one caller"


def test_a_send_beyond_the_concurrent_tasks_is_refused(caller: Caller) -> None:
    agent = secured_agent("busy", max_concurrent_tasks=1)
    message = user_message("still going", message_id="m")
    spec = NewTask(agent_id=agent.pk, owner=caller.principal, context_id="c", message=message,
                   protocol_version=V1, execution_mode=ExecutionMode.INLINE)  # fmt: skip
    async_to_sync(writer.open)(spec, [StatusChange(TaskState.WORKING)])

    refused = send(caller, "busy", V1)

    assert refused.status_code == 429
    assert "1 tasks" in refused.json()["error"]["message"]
    refusal = "This agent is already working on 1 tasks; try again shortly."
    assert refused.json()["error"] == hub_error(
        V1, -32004, refusal, "UNSUPPORTED_OPERATION", limit=refusal
    )
    # Reading is not sending: GetTask still works while the agent is full.
    got = caller.rpc("busy", V1, "get", {"id": str(spec.id)})
    assert got.status_code == 200


def test_a_body_over_the_agents_size_is_refused_with_413(caller: Caller) -> None:
    secured_agent("small", max_message_bytes=600)

    refused = send(caller, "small", V1, text="x" * 1000)

    assert refused.status_code == 413
    assert "600 bytes" in refused.json()["error"]["message"]
    message = "This agent takes requests of at most 600 bytes."
    assert refused.json()["error"] == hub_error(
        V1, -32004, message, "UNSUPPORTED_OPERATION", limit=message
    )
    assert send(caller, "small", V1, text="short").status_code == 200


@both_versions
def test_a_turn_past_its_time_limit_fails_and_says_so(caller: Caller, version: str) -> None:
    secured_agent("sleepy", "slow", execution_mode="inline", task_timeout_seconds=1,
                  executor_settings={"step": 0.1})  # fmt: skip

    task = caller.send("sleepy", version, text="30")

    assert state_of(task) == "failed"
    assert "longer than its limit of 1 seconds" in " ".join(texts(task["status"]["message"]))
    assert texts(task["status"]["message"]) == ["The task ran longer than its limit of 1 seconds."]


def test_the_admin_shows_how_often_an_agent_met_its_limits(
    caller: Caller, operator_client: Client
) -> None:
    secured_agent("limited", requests_per_minute=1)
    body = envelope(V1, "send", text="hi")
    for _ in range(3):
        caller.post("limited", body, V1)

    page = operator_client.get(reverse("admin:agents_agent_changelist")).content.decode()

    assert '<td class="field-limit_hits">2</td>' in page
    agent = Agent.objects.get(slug="limited")
    change = operator_client.get(reverse("admin:agents_agent_change", args=[agent.pk]))
    assert "requests per minute" in change.content.decode()
