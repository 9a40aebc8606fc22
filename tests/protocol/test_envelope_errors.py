"""The endpoint's door and envelope: size, media type, JSON, JSON-RPC shape, version and method
name, and the error objects each version gets back."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from agents.models import Agent
from tests.factories.agents import SECURED
from tests.factories.envelopes import envelope, sample
from tests.factories.errors import hub_error
from tests.factories.versions import METHODS, V03, V1, VERSIONS
from tests.protocol.answers import error_info, error_of, result_of, task_of
from tests.protocol.callers import Caller

pytestmark = pytest.mark.django_db


def test_it_answers_with_the_id_of_the_request(caller: Caller, echo: Agent) -> None:
    assert caller.rpc("echo", V1, "send").json()["id"] == "req-send-1"
    assert caller.rpc("echo", V03, "send").json()["id"] == 1


def test_it_serves_the_endpoint_without_the_final_slash(caller: Caller, echo: Agent) -> None:
    response = caller.client.post(
        "/agents/echo/jsonrpc",
        data=json.dumps(sample(V1, "send")),
        content_type="application/json",
        headers={"A2A-Version": V1, "X-API-Key": caller.key or ""},
    )

    assert response.status_code == 200
    assert task_of(result_of(response), V1)["status"]["state"] == "TASK_STATE_COMPLETED"


def test_it_takes_only_posts(caller: Caller, echo: Agent) -> None:
    response = caller.client.get("/agents/echo/jsonrpc/")

    assert response.status_code == 405
    assert response["Allow"] == "POST"


def test_it_answers_not_found_for_an_agent_it_does_not_serve(caller: Caller) -> None:
    response = caller.post("nobody", sample(V1, "send"), V1)

    assert response.status_code == 404


# -- the door: size and media type ------------------------------------------------------------


@pytest.mark.parametrize("media", ["text/plain", "application/x-www-form-urlencoded", ""])
def test_it_refuses_a_body_that_is_not_json_with_415(
    caller: Caller, echo: Agent, media: str
) -> None:
    response = caller.post("echo", sample(V1, "send"), V1, content_type=media)

    error = response.json()["error"]
    assert response.status_code == 415
    assert error["code"] == -32005
    assert error_info(error)["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"


def test_it_takes_json_media_types_with_parameters_and_suffixes(
    caller: Caller, echo: Agent
) -> None:
    for media in ("application/json; charset=utf-8", "application/a2a+json"):
        response = caller.post("echo", sample(V1, "send"), V1, content_type=media)
        assert response.status_code == 200, media
        assert "result" in response.json(), media


def test_it_refuses_a_body_over_the_limit_with_413(
    caller: Caller, echo: Agent, settings: Any
) -> None:
    settings.A2A_MAX_REQUEST_BYTES = 1024
    body = envelope(V1, "send", text="x" * 2000)

    response = caller.post("echo", body, V1)

    error = response.json()["error"]
    assert response.status_code == 413
    assert error["code"] == -32600
    assert error_info(error)["reason"] == "INVALID_REQUEST"
    assert caller.result("echo", V1, "list").get("tasks", []) == []


def test_it_takes_a_body_just_under_the_limit(caller: Caller, echo: Agent, settings: Any) -> None:
    settings.A2A_MAX_REQUEST_BYTES = 1024
    body = envelope(V1, "send", text="x" * 700)

    assert len(json.dumps(body)) < 1024
    assert result_of(caller.post("echo", body, V1))["task"]


# -- the envelope ----------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("raw", ['{"jsonrpc": "2.0", "id": 1, "method": ', "nonsense", "\xff"])
def test_it_answers_parse_error_for_a_body_that_is_not_json(
    caller: Caller, echo: Agent, version: str, raw: str
) -> None:
    response = caller.post("echo", raw.encode("latin-1"), version)

    body = response.json()
    assert response.status_code == 200
    assert body["id"] is None
    assert body["error"]["code"] == -32700
    if version == V1:
        # The SDK's table of reasons has none for a parse error; the ErrorInfo is still there.
        assert error_info(body["error"])["reason"]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "payload",
    [
        [{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}],
        "just a string",
        42,
        None,
        {"jsonrpc": "1.0", "id": 1, "method": "GetTask", "params": {}},
        {"id": 1, "method": "GetTask", "params": {}},
        {"jsonrpc": "2.0", "id": 1, "params": {}},
        {"jsonrpc": "2.0", "id": 1, "method": 7, "params": {}},
        {"jsonrpc": "2.0", "id": {"bad": "type"}, "method": "GetTask", "params": {}},
        {"jsonrpc": "2.0", "id": True, "method": "GetTask", "params": {}},
        {"jsonrpc": "2.0", "id": [1], "method": "GetTask", "params": {}},
    ],
    ids=[
        "batch", "string", "number", "null", "jsonrpc-1.0", "no-jsonrpc", "no-method",
        "method-not-a-string", "id-an-object", "id-a-boolean", "id-a-list",
    ],
)  # fmt: skip
def test_it_answers_invalid_request_for_what_is_not_a_request_object(
    caller: Caller, echo: Agent, version: str, payload: Any
) -> None:
    error = error_of(caller.post("echo", json.dumps(payload), version))

    assert error["code"] == -32600
    if version == V1:
        assert error_info(error)["reason"] == "INVALID_REQUEST"


def test_it_answers_a_request_without_an_id_with_a_null_id(caller: Caller, echo: Agent) -> None:
    body = sample(V03, "send")
    del body["id"]

    answer = caller.post("echo", body, V03).json()

    assert answer["id"] is None
    assert answer["result"]["kind"] == "task"


def test_it_answers_a_malformed_request_without_an_id_with_a_null_id(
    caller: Caller, echo: Agent
) -> None:
    body = caller.post("echo", {"jsonrpc": "2.0", "params": {}}, V03).json()

    assert body["id"] is None
    assert body["error"]["code"] == -32600


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("method", ["tasks/explode", "DoSomething", "message/sendd", ""])
def test_it_answers_method_not_found_for_an_unknown_method(
    caller: Caller, echo: Agent, version: str, method: str
) -> None:
    body = sample(version, "get") | {"method": method}

    error = error_of(caller.post("echo", body, version))

    assert error["code"] == (-32600 if method == "" else -32601)


def test_it_answers_method_not_found_for_a_0_3_name_sent_as_1_0(
    caller: Caller, echo: Agent
) -> None:
    error = error_of(caller.post("echo", sample(V03, "get"), V1))

    assert error["code"] == -32601
    assert error_info(error)["reason"] == "METHOD_NOT_FOUND"


# -- the version ------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["send", "get", "list", "cancel", "card"])
def test_it_asks_for_the_version_header_when_a_1_0_method_comes_without_it(
    caller: Caller, echo: Agent, op: str
) -> None:
    error = error_of(caller.post("echo", sample(V1, op), None))

    assert error["code"] == -32009
    message = f"{METHODS[V1][op]} is an A2A 1.0 method: send the header A2A-Version: 1.0."
    assert error == {"code": -32009, "message": message}


@pytest.mark.parametrize("version", VERSIONS)
def test_it_refuses_a_version_it_does_not_serve(caller: Caller, echo: Agent, version: str) -> None:
    error = error_of(caller.post("echo", sample(version, "send"), None, {"A2A-Version": "9.9"}))

    assert error["code"] == -32009
    message = "A2A version '9.9' is not served here; use one of 0.3, 1.0."
    # Only 1.0-era clients send the header: the error carries 1.0's ErrorInfo.
    assert error == hub_error(V1, -32009, message, "VERSION_NOT_SUPPORTED")
    assert caller.result("echo", V1, "list").get("tasks", []) == []


def test_it_reads_the_version_from_the_query_string(caller: Caller, echo: Agent) -> None:
    response = caller.client.post(
        "/agents/echo/jsonrpc/?A2A-Version=1.0",
        data=json.dumps(sample(V1, "list")),
        content_type="application/json",
        headers={"X-API-Key": caller.key or ""},
    )

    assert result_of(response)["pageSize"] == 50


@pytest.mark.parametrize("header", ["0.3", "0.3.0", " ", ""])
def test_it_treats_version_0_3_like_no_header(caller: Caller, echo: Agent, header: str) -> None:
    headers = {"A2A-Version": header}

    legacy = caller.post("echo", sample(V03, "send"), None, headers)
    current = caller.post("echo", sample(V1, "send"), None, headers)

    assert result_of(legacy)["kind"] == "task"
    assert error_of(current)["code"] == -32009


def test_it_counts_only_major_and_minor_of_the_version(caller: Caller, echo: Agent) -> None:
    response = caller.post("echo", sample(V1, "send"), None, {"A2A-Version": "1.0.1"})

    assert task_of(result_of(response), V1)["status"]["state"] == "TASK_STATE_COMPLETED"


# -- error objects -------------------------------------------------------------------------------


def test_1_0_errors_carry_an_error_info_and_0_3_errors_do_not(caller: Caller, echo: Agent) -> None:
    current = caller.error("echo", V1, "get", {"id": "missing"})
    legacy = caller.error("echo", V03, "get", {"id": "missing"})

    assert error_info(current)["reason"] == "TASK_NOT_FOUND"
    assert legacy["code"] == current["code"] == -32001
    assert not isinstance(legacy.get("data"), list)


@pytest.fixture
def broken(db: None) -> Agent:
    # An agent whose executor kind this build no longer has: its code cannot be loaded.
    return Agent.objects.create(
        slug="broken", name="Broken", description="Its executor is gone.",
        executor_kind="retired-kind", execution_mode="inline", **SECURED,
    )  # fmt: skip


@pytest.mark.parametrize("version", VERSIONS)
def test_it_reports_an_internal_error_with_a_reference_and_no_stack_trace(
    caller: Caller, broken: Agent, version: str
) -> None:
    response = caller.rpc("broken", version, "send")

    error = error_of(response)
    text = response.content.decode()
    assert error["code"] == -32603
    assert re.fullmatch(r"Internal error \(reference [0-9a-f]{12}\)", error["message"])
    for leak in ("Traceback", "KeyError", "retired-kind", ".py", "line "):
        assert leak not in text
