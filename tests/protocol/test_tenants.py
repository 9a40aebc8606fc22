"""The shared JSON-RPC endpoint `/a2a/jsonrpc/`: the 1.0 `params.tenant` names the hosted
agent; the task and the rules (keys, isolation) are that agent's, as at its own URL. A
missing or unknown tenant, or a 0.3 request (which cannot name one), is -32602 naming
`tenant`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agents.models import Agent
from tasks.models import Task
from tests.door_client import Door
from tests.factories.envelopes import envelope, request_headers
from tests.factories.errors import invalid_params
from tests.factories.versions import V03, V1
from tests.protocol.answers import error_of, result_of
from tests.protocol.callers import Caller

pytestmark = pytest.mark.usefixtures("door")

SHARED = "/a2a/jsonrpc/"


def post_shared(caller: Caller, version: str, body: dict[str, Any]) -> Any:
    return Door().post(
        SHARED,
        data=json.dumps(body),
        content_type="application/json",
        headers=request_headers(version, caller.key),
    )


def test_the_tenant_names_the_agent_that_takes_the_message(caller: Caller, echo: Agent) -> None:
    body = envelope(V1, "send", {"tenant": "echo"}, text="to whom it may concern")

    task = result_of(post_shared(caller, V1, body))["task"]

    assert task["artifacts"][0]["parts"] == [{"text": "to whom it may concern"}]
    assert Task.objects.get(id=task["id"]).agent == echo
    assert caller.get("echo", V1, task["id"])["id"] == task["id"]  # the same task at its URL


def test_another_callers_task_stays_hidden_behind_the_shared_url(
    caller: Caller, stranger: Caller, echo: Agent
) -> None:
    task = caller.send("echo", V1)

    answer = post_shared(stranger, V1, envelope(V1, "get", {"id": task["id"], "tenant": "echo"}))

    assert error_of(answer)["code"] == -32001


def test_a_caller_without_a_key_is_401_at_the_shared_url(anonymous: Caller, echo: Agent) -> None:
    response = post_shared(anonymous, V1, envelope(V1, "send", {"tenant": "echo"}, text="x"))

    assert response.status_code == 401 and response["WWW-Authenticate"]
    assert not Task.objects.exists()


@pytest.mark.parametrize(
    ("version", "params", "problem"),
    [
        (V1, {}, "name the agent (its slug) this request is for"),
        (V1, {"tenant": "nobody"}, "no agent named 'nobody' is served here"),
        (V03, {"tenant": "echo"}, "name the agent (its slug) this request is for"),
    ],
)
def test_a_missing_unknown_or_03_tenant_is_invalid_params_naming_tenant(
    caller: Caller, echo: Agent, version: str, params: dict[str, Any], problem: str
) -> None:
    answer = post_shared(caller, version, envelope(version, "send", params, text="x"))

    assert error_of(answer) == invalid_params(version, "tenant", problem)
    assert not Task.objects.exists()
