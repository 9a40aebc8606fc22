"""The hop count every binding reads (`A2A-Hub-Hops`): a request that has passed through more
hubs than A2A_MAX_HOPS is refused before it reaches a handler, as an invalid request naming
the limit (JSON-RPC -32600, HTTP 400 on REST); a task keeps the count it came with, and a
client cannot set that count through the message's metadata."""

from __future__ import annotations

from typing import Any

import pytest

from agents.models import Agent
from tests.factories.messages import wire_message
from tests.factories.versions import V1
from tests.protocol.callers import Caller
from tests.protocol.test_rest import Rest, message

pytestmark = pytest.mark.django_db


def send(caller: Caller, hops: str | None, **params: Any) -> Any:
    headers = {"A2A-Hub-Hops": hops} if hops is not None else None
    body = {"message": wire_message(V1, "hi"), **params}
    return caller.rpc("echo", V1, "send", body, headers=headers).json()


def test_a_request_past_the_hop_limit_is_an_invalid_request_naming_the_limit(
    caller: Caller, echo: Agent, settings: Any
) -> None:
    settings.A2A_MAX_HOPS = 3

    error = send(caller, "4")["error"]

    assert error["code"] == -32600
    assert "passed through 4 hubs" in error["message"] and "A2A_MAX_HOPS" in error["message"]
    assert "result" in send(caller, "3")


@pytest.mark.parametrize("hops", ["-1", "two", "1.5", "9999999", "٣"])
def test_a_hop_count_that_is_no_whole_number_is_an_invalid_request(
    caller: Caller, echo: Agent, hops: str
) -> None:
    error = send(caller, hops)["error"]

    assert error["code"] == -32600
    assert "A2A-Hub-Hops must be a whole number" in error["message"]


def test_rest_answers_400_past_the_hop_limit(caller: Caller, echo: Agent, settings: Any) -> None:
    settings.A2A_MAX_HOPS = 2
    rest = Rest(caller.key)

    response = rest.call("POST", "message:send", {"message": message("x")},
                         headers={"A2A-Hub-Hops": "3"})  # fmt: skip

    assert response.status_code == 400
    assert "passed through 3 hubs" in response.json()["error"]["message"]


def test_a_task_keeps_the_count_it_came_with_and_a_client_cannot_set_it(
    caller: Caller, echo: Agent
) -> None:
    from_a_hub = send(caller, "2")["result"]["task"]
    claimed = send(caller, None, metadata={"a2aHubHops": 7, "mine": 1})["result"]["task"]

    assert from_a_hub["metadata"] == {"a2aHubHops": 2}
    assert claimed["metadata"] == {"mine": 1}
