"""Values a client may send that no field can hold, found by probing every method: a file's
bytes that are not base64, a historyLength past protobuf's int32, a 0.1 role that is no
string, a tenant no agent could be named. Each is -32602 naming the field (HTTP 400 on REST),
never -32603, and never a file stored empty. What the versions allow is still taken whole."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from agents.models import Agent
from tasks.models import Task
from tests.door_client import Door
from tests.factories.agents import KEY_HEADER
from tests.factories.envelopes import UNKNOWN_TASK
from tests.factories.errors import invalid_params
from tests.factories.pre02 import old_request, old_send
from tests.factories.versions import V03, V1
from tests.protocol.answers import error_of, result_of, task_of
from tests.protocol.callers import Caller

pytestmark = pytest.mark.django_db

INT32_MAX = 2**31 - 1
NOT_BASE64 = "is not base64"


def keyed(caller: Caller, **headers: str) -> dict[str, str]:
    return {KEY_HEADER: str(caller.key), **headers}


def v1_file(raw: str) -> dict[str, Any]:
    return {"raw": raw, "mediaType": "text/plain"}


def v03_file(encoded: str) -> dict[str, Any]:
    return {"kind": "file", "file": {"bytes": encoded, "mimeType": "text/plain"}}


@pytest.mark.parametrize("raw", ["!!!!", "%%%not base64%%%", "aGk=x", "é"])
def test_a_1_0_file_that_is_not_base64_is_invalid_params(
    caller: Caller, echo: Agent, raw: str
) -> None:
    # protobuf's parser dropped what is not base64: "!!!!" was stored as an empty file.
    error = caller.error("echo", V1, "send", message={"parts": [v1_file(raw)]})

    assert error == invalid_params(V1, "message.parts[0].raw", NOT_BASE64)
    assert not Task.objects.exists()


@pytest.mark.parametrize(
    ("raw", "data"),
    [("aGk=", b"hi"), ("aGk", b"hi"), ("-_8=", b"\xfb\xff"), ("aGVs\nbG8=", b"hello"), ("", b"")],
    ids=["padded", "unpadded", "url-safe", "line-wrapped", "empty"],
)
def test_a_1_0_file_in_any_base64_proto3_allows_is_kept_exactly(
    caller: Caller, echo: Agent, raw: str, data: bytes
) -> None:
    task = caller.send("echo", V1, message={"parts": [v1_file(raw), {"text": "and text"}]})

    sent = caller.get("echo", V1, task["id"])["history"][0]["parts"][0]
    assert json.loads(json.dumps(sent))["raw"] == _standard(data)


def _standard(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.mark.parametrize("encoded", ["!!!!", "aGk", "a-_b", "x"])
def test_a_0_3_file_that_is_not_padded_standard_base64_is_invalid_params(
    caller: Caller, echo: Agent, encoded: str
) -> None:
    # The SDK's conversion raised on bad padding (-32603) and dropped the rest silently.
    error = caller.error("echo", V03, "send", message={"parts": [v03_file(encoded)]})

    assert error == invalid_params(V03, "message.parts.0.file.bytes", NOT_BASE64)
    assert not Task.objects.exists()


def test_a_0_3_file_comes_back_as_sent(caller: Caller, echo: Agent) -> None:
    task = caller.send("echo", V03, message={"parts": [v03_file("aGk=")]})

    got = caller.get("echo", V03, task["id"])
    assert got["history"][0]["parts"][0]["file"]["bytes"] == "aGk="


def test_a_0_3_rest_file_whose_bytes_are_not_base64_text_is_a_400(
    door: Door, caller: Caller, echo: Agent
) -> None:
    # 0.3 REST carries the base64 text as proto bytes (the SDK's client encodes it twice):
    # bytes that decode to text which is not base64 were an HTTP 500.
    file = {"fileWithBytes": "aGk=", "mimeType": "text/plain"}
    body = {"message": {"messageId": "m-file", "role": "ROLE_USER", "content": [{"file": file}]}}

    response = door.post("/agents/echo/rest/v1/message:send", data=json.dumps(body),
                         content_type="application/json", headers=keyed(caller))  # fmt: skip

    assert response.status_code == 400, response.content
    assert "message.parts.0.file.bytes: is not base64" in response.json()["error"]["message"]


def test_a_0_3_rest_send_asking_for_no_history_gets_none(
    door: Door, caller: Caller, tck: Agent
) -> None:
    body = {"message": {"messageId": "tck-complete-task-rest-h0", "role": "ROLE_USER",
                        "content": [{"text": "hello"}]},
            "configuration": {"historyLength": 0}}  # fmt: skip

    response = door.post("/agents/tck/rest/v1/message:send", data=json.dumps(body),
                         content_type="application/json", headers=keyed(caller))  # fmt: skip

    assert response.status_code == 200, response.content
    assert response.json()["task"].get("history", []) == []


@pytest.mark.parametrize("length", [INT32_MAX + 1, 3_000_000_000, 10**30])
def test_a_0_3_history_length_past_int32_is_invalid_params(
    caller: Caller, echo: Agent, length: int
) -> None:
    problem = f"must be a whole number up to {INT32_MAX}"

    got = caller.error("echo", V03, "get", {"id": UNKNOWN_TASK, "historyLength": length})
    sent = caller.error("echo", V03, "send", configuration={"historyLength": length})

    assert got == invalid_params(V03, "historyLength", problem)
    assert sent == invalid_params(V03, "configuration.historyLength", problem)


def test_a_0_3_history_length_of_int32_max_is_taken(caller: Caller, echo: Agent) -> None:
    task = caller.send("echo", V03, configuration={"historyLength": INT32_MAX})

    history = caller.get("echo", V03, task["id"], historyLength=INT32_MAX)["history"]
    assert [m["messageId"] for m in history] == [task["history"][0]["messageId"]]


@pytest.mark.parametrize("length", [INT32_MAX + 1, -1, 1.5])
def test_a_pre_0_2_history_length_that_is_no_int32_is_invalid_params(
    caller: Caller, echo: Agent, length: Any
) -> None:
    error = error_of(caller.post("echo", old_send("t-2", historyLength=length)))

    assert error == invalid_params(
        V03, "historyLength", f"must be a whole number from 0 to {INT32_MAX}"
    )


@pytest.mark.parametrize("role", [["user"], {"user": 1}, 1, None])
def test_a_pre_0_2_role_that_is_no_string_is_invalid_params(
    caller: Caller, echo: Agent, role: Any
) -> None:
    body = old_request("tasks/send", id="t-role", message={
        "role": role, "parts": [{"type": "text", "text": "hi"}]})  # fmt: skip

    error = error_of(caller.post("echo", body))

    assert error == invalid_params(V03, "message.role", 'must be "user" or "agent"')


@pytest.mark.parametrize(
    "tenant",
    ["\ud800", "echo\ud800", "x" * 10_000, "Echo", "echo\n"],
    ids=["surrogate", "slug-and-surrogate", "long", "capital", "newline"],
)
def test_a_tenant_no_agent_could_be_named_is_invalid_params(
    door: Door, echo: Agent, tenant: str
) -> None:
    # A lone surrogate reached the database, which cannot encode it (-32603).
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask",
            "params": {"id": UNKNOWN_TASK, "tenant": tenant}}  # fmt: skip

    response = door.post("/a2a/jsonrpc/", data=json.dumps(body), content_type="application/json",
                           headers={"A2A-Version": "1.0"})  # fmt: skip

    error = error_of(response)
    assert error["code"] == -32602
    assert error["data"][0]["metadata"]["field"] == "tenant"


def test_the_slug_of_a_served_agent_is_still_a_tenant(
    door: Door, caller: Caller, echo: Agent
) -> None:
    task = task_of(result_of(door.post(
        "/a2a/jsonrpc/", content_type="application/json",
        headers={"A2A-Version": "1.0", KEY_HEADER: str(caller.key)},
        data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "tenant": "echo", "message": {"messageId": "m-tenant", "role": "ROLE_USER",
                                          "parts": [{"text": "hi"}]}}}),
    )), V1)  # fmt: skip

    assert task["status"]["state"] == "TASK_STATE_COMPLETED"


def test_a_very_long_task_id_is_not_found_without_being_echoed_whole(
    caller: Caller, echo: Agent
) -> None:
    # The 1.0 error echoed the whole 100 KB id (0.3 refuses ids over 200 characters).
    error = caller.error("echo", V1, "get", {"id": "a" * 100_000})

    assert error["code"] == -32001
    assert error["message"] == f"Task {'a' * 80!r}... (100000 characters) was not found."
