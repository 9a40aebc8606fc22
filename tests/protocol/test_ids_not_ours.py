"""Event ids and page tokens the hub could not have issued: a `Last-Event-ID` that is no event
id of ours (too long, digits of another script, negative, past a bigint) and a ListTasks
`pageToken` that is no token of ours (not base64, a total past what `totalSize` holds, a
date past the calendar, garbage) are invalid params in both bindings: -32602 over JSON-RPC,
HTTP 400 over HTTP+JSON, never -32603 or a 500."""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

import pytest

from agents.models import Agent
from tests.door_client import Door
from tests.factories.agents import KEY_HEADER
from tests.factories.envelopes import rpc_body
from tests.factories.errors import invalid_params
from tests.factories.versions import V1
from tests.protocol.answers import error_of
from tests.protocol.callers import Caller

pytestmark = pytest.mark.usefixtures("door")

NOT_OUR_EVENT = "is not an event id this server sent"
NOT_OUR_TOKEN = "is not a token this server issued"
EVENT_IDS = ["9" * 5000, "١٢", "²", "-1", str(2**63), "12a", "1.5"]
ANY_TASK = "00000000-0000-0000-0000-000000000000"


def token(*fields: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(fields)).encode()).decode()


STAMP, TASK = "2026-11-24T10:00:00+00:00", str(uuid.uuid4())
PAGE_TOKENS = {
    "total past int64": token(STAMP, TASK, 2**64),
    "total past int32": token(STAMP, TASK, 2**31),
    "total not whole": token(STAMP, TASK, 1e400),
    "total a string": token(STAMP, TASK, "3"),
    "date past the calendar": token("0001-01-01T00:00:00+14:00", TASK, 1),
    "id not a string": token(STAMP, 5, 1),
    "not a list": token({"a": 1}),
    "not base64": "!!!***",
    "far too long": "A" * 5000,
    "deep JSON": base64.urlsafe_b64encode(b"[" * 100_000).decode()[:500],
}


@pytest.mark.parametrize("event_id", EVENT_IDS)
def test_a_last_event_id_that_is_not_ours_is_invalid_params(
    caller: Caller, echo: Agent, event_id: str
) -> None:
    body = rpc_body(V1, "subscribe", {"id": ANY_TASK})

    response = caller.post("echo", body, V1, headers={"Last-Event-ID": event_id})

    assert error_of(response) == invalid_params(V1, "Last-Event-ID", NOT_OUR_EVENT)


@pytest.mark.parametrize("event_id", EVENT_IDS)
def test_over_http_json_a_last_event_id_that_is_not_ours_is_a_400(
    caller: Caller, echo: Agent, event_id: str
) -> None:
    response = Door().get(f"/agents/echo/rest/tasks/{ANY_TASK}:subscribe",
                            headers={"A2A-Version": V1, KEY_HEADER: caller.key or "",
                                     "Last-Event-ID": event_id})  # fmt: skip

    assert response.status_code == 400
    assert response.json()["error"]["message"] == f"Invalid params: Last-Event-ID: {NOT_OUR_EVENT}"


@pytest.mark.parametrize("page_token", PAGE_TOKENS.values(), ids=PAGE_TOKENS.keys())
def test_a_page_token_that_is_not_ours_is_invalid_params(
    caller: Caller, echo: Agent, page_token: str
) -> None:
    error = caller.error("echo", V1, "list", {"pageToken": page_token})

    assert error == invalid_params(V1, "pageToken", NOT_OUR_TOKEN)


@pytest.mark.parametrize("page_token", PAGE_TOKENS.values(), ids=PAGE_TOKENS.keys())
def test_over_http_json_a_page_token_that_is_not_ours_is_a_400(
    caller: Caller, echo: Agent, page_token: str
) -> None:
    response = Door().get("/agents/echo/rest/tasks", {"pageToken": page_token},
                            headers={"A2A-Version": V1, KEY_HEADER: caller.key or ""})  # fmt: skip

    assert response.status_code == 400
    assert response.json()["error"]["message"] == f"Invalid params: pageToken: {NOT_OUR_TOKEN}"


@pytest.mark.parametrize("length", ["9" * 5000, "²", str(2**31)])
def test_a_0_3_history_length_that_is_no_number_it_takes_is_a_400(
    caller: Caller, echo: Agent, length: str
) -> None:
    headers = {"A2A-Version": "0.3", KEY_HEADER: caller.key or ""}

    response = Door().get(
        f"/agents/echo/rest/v1/tasks/{ANY_TASK}", {"historyLength": length}, headers=headers
    )

    assert response.status_code == 400
    assert "historyLength" in response.json()["error"]["message"]
