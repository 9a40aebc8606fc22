"""SendMessage (1.0) and message/send (0.3): new tasks, contexts, follow-ups to unknown or
ended tasks, content types, required extensions, and non-blocking sends."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from agents.models import Agent
from tests.factories.agents import SECURED, make_agent
from tests.factories.envelopes import NON_BLOCKING, UNKNOWN_TASK, envelope
from tests.factories.errors import hub_error, invalid_params, task_not_found, validation_failed
from tests.factories.versions import V03, V1, VERSIONS
from tests.protocol.answers import (
    artifact_texts,
    error_info,
    error_of,
    is_terminal,
    result_of,
    state_of,
    task_of,
    texts,
)
from tests.protocol.callers import AsyncCaller, Caller

pytestmark = pytest.mark.django_db

REQUIRED_EXTENSION = "urn:a2a:hub-test:required"


@pytest.mark.parametrize("version", VERSIONS)
def test_it_completes_a_task_and_returns_it(caller: Caller, echo: Agent, version: str) -> None:
    task = caller.send("echo", version, "hello there")

    assert state_of(task) == "completed"
    assert artifact_texts(task) == ["hello there"]
    assert [texts(m) for m in task["history"]] == [["hello there"]]
    assert task["history"][0]["messageId"] == "msg-0001"


def test_it_answers_in_the_shape_of_each_version(caller: Caller, echo: Agent) -> None:
    current = result_of(caller.rpc("echo", V1, "send"))
    legacy = result_of(caller.rpc("echo", V03, "send"))

    assert current["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert current["task"]["history"][0]["role"] == "ROLE_USER"
    assert "kind" not in current["task"]
    assert legacy["kind"] == "task"
    assert legacy["status"]["state"] == "completed"
    assert legacy["history"][0]["role"] == "user"
    assert legacy["artifacts"][0]["parts"] == [{"kind": "text", "text": "hello"}]


@pytest.mark.parametrize("version", VERSIONS)
def test_it_makes_task_and_context_ids(caller: Caller, echo: Agent, version: str) -> None:
    first = caller.send("echo", version)
    second = caller.send("echo", version)

    for task in (first, second):
        uuid.UUID(task["id"])
        uuid.UUID(task["contextId"])
    assert first["id"] != second["id"]
    assert first["contextId"] != second["contextId"]


@pytest.mark.parametrize("version", VERSIONS)
def test_it_keeps_the_context_the_client_names(caller: Caller, echo: Agent, version: str) -> None:
    first = caller.send("echo", version)
    second = caller.send("echo", version, message={"contextId": first["contextId"]})

    assert second["contextId"] == first["contextId"]
    assert second["id"] != first["id"]
    assert second["history"][0]["contextId"] == first["contextId"]


@pytest.mark.parametrize("version", VERSIONS)
def test_it_replies_with_a_message_when_the_agent_makes_no_task(
    caller: Caller, tck: Agent, version: str
) -> None:
    result = caller.result("tck", version, "send", message={"messageId": "tck-message-response-1"})

    message = result["message"] if version == V1 else result
    if version == V03:
        assert message["kind"] == "message"
    assert texts(message) == ["Direct message response"]
    assert caller.result("tck", V1, "list").get("tasks", []) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_it_returns_no_history_for_history_length_zero(
    caller: Caller, echo: Agent, version: str
) -> None:
    task = caller.send("echo", version, configuration={"historyLength": 0})

    assert task.get("history", []) == []
    assert artifact_texts(task) == ["hello"]


@pytest.mark.parametrize("version", VERSIONS)
def test_it_refuses_a_negative_history_length(caller: Caller, echo: Agent, version: str) -> None:
    error = caller.error("echo", version, "send", configuration={"historyLength": -1})

    assert error["code"] == -32602
    assert error == invalid_params(version, "historyLength", "must not be negative")


# -- follow-ups that cannot go on -------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_it_returns_task_not_found_for_an_unknown_task_id(
    caller: Caller, echo: Agent, version: str
) -> None:
    error = caller.error("echo", version, "send", message={"taskId": UNKNOWN_TASK})

    assert error["code"] == -32001
    if version == V1:
        assert error_info(error)["reason"] == "TASK_NOT_FOUND"
    assert error == task_not_found(version, UNKNOWN_TASK)


@pytest.mark.parametrize("version", VERSIONS)
def test_it_returns_task_not_found_for_another_callers_task(
    caller: Caller, stranger: Caller, interview: Agent, version: str
) -> None:
    task = caller.send("interview", version)

    error = stranger.error(
        "interview", version, "send", text="Mallory", message={"taskId": task["id"]}
    )

    assert error["code"] == -32001
    assert state_of(caller.get("interview", version, task["id"])) == "input-required"


@pytest.mark.parametrize("version", VERSIONS)
def test_it_refuses_a_message_to_a_terminal_task(caller: Caller, echo: Agent, version: str) -> None:
    task = caller.send("echo", version)

    error = caller.error("echo", version, "send", message={"taskId": task["id"]})

    assert error["code"] == -32004
    if version == V1:
        assert error_info(error)["reason"] == "UNSUPPORTED_OPERATION"
    assert len(caller.get("echo", version, task["id"])["history"]) == 1


@pytest.mark.parametrize("version", VERSIONS)
def test_it_refuses_a_follow_up_whose_context_does_not_match_the_task(
    caller: Caller, interview: Agent, version: str
) -> None:
    task = caller.send("interview", version)

    error = caller.error(
        "interview", version, "send", text="Ada",
        message={"taskId": task["id"], "contextId": str(uuid.uuid4())},
    )  # fmt: skip

    assert error["code"] == -32602
    problem = "does not match the task's context"
    assert error == invalid_params(version, "message.contextId", problem)
    assert state_of(caller.get("interview", version, task["id"])) == "input-required"


# -- invalid params ------------------------------------------------------------------------


def drop_message(body: dict[str, Any], version: str) -> None:
    del body["params"]["message"]


def empty_parts(body: dict[str, Any], version: str) -> None:
    body["params"]["message"]["parts"] = []


def drop_message_id(body: dict[str, Any], version: str) -> None:
    del body["params"]["message"]["messageId"]


def agent_role(body: dict[str, Any], version: str) -> None:
    body["params"]["message"]["role"] = "ROLE_AGENT" if version == V1 else "agent"


# The SDK's 1.0 validator checks the request's shape before the hub does, and names fields as
# the .proto spells them; the hub checks what the shape allows but the protocol does not.
INVALID_SENDS = [
    (drop_message, {
        V1: validation_failed("message", "Field is required."),
        V03: invalid_params(V03, "message", "Field required"),
    }),
    (empty_parts, {
        V1: validation_failed("message.parts", "Field must contain at least one element."),
        V03: invalid_params(V03, "message.parts", "must hold at least one part"),
    }),
    (drop_message_id, {
        V1: validation_failed("message.message_id", "Field is required."),
        V03: invalid_params(V03, "message.messageId", "Field required"),
    }),
    (agent_role, {
        V1: invalid_params(V1, "message.role", "must be the user's role"),
        V03: invalid_params(V03, "message.role", "must be the user's role"),
    }),
]  # fmt: skip


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("change", "expected"), INVALID_SENDS, ids=[change.__name__ for change, _ in INVALID_SENDS]
)
def test_it_refuses_invalid_params_naming_the_field(
    caller: Caller,
    echo: Agent,
    version: str,
    change: Callable[[dict[str, Any], str], None],
    expected: dict[str, dict[str, Any]],
) -> None:
    body = envelope(version, "send")
    change(body, version)

    error = error_of(caller.post("echo", body, version))

    assert error["code"] == -32602
    assert error == expected[version]
    if version == V1:
        assert error_info(error)["reason"] == "INVALID_PARAMS"
    assert caller.result("echo", V1, "list").get("tasks", []) == []


# -- content types and extensions ----------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_it_refuses_output_modes_the_agent_cannot_produce(
    caller: Caller, echo: Agent, version: str
) -> None:
    error = caller.error(
        "echo", version, "send", configuration={"acceptedOutputModes": ["image/png"]}
    )

    assert error["code"] == -32005
    if version == V1:
        assert error_info(error)["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"


@pytest.mark.parametrize("version", VERSIONS)
def test_it_accepts_output_modes_that_overlap(caller: Caller, echo: Agent, version: str) -> None:
    task = caller.send(
        "echo", version, configuration={"acceptedOutputModes": ["image/png", "text/*"]}
    )

    assert state_of(task) == "completed"


@pytest.mark.parametrize("version", VERSIONS)
def test_it_refuses_an_input_part_type_the_agent_does_not_take(
    caller: Caller, echo: Agent, version: str
) -> None:
    part = {"data": {"k": 1}} if version == V1 else {"kind": "data", "data": {"k": 1}}

    error = caller.error("echo", version, "send", message={"parts": [part]})

    assert error["code"] == -32005
    message = "This agent does not accept application/json (it takes text/plain)."
    assert error == hub_error(version, -32005, message, "CONTENT_TYPE_NOT_SUPPORTED")


@pytest.mark.parametrize("version", VERSIONS)
def test_it_takes_data_parts_when_the_agent_accepts_json(caller: Caller, version: str) -> None:
    make_agent("json-echo", **SECURED, default_input_modes=["text/plain", "application/json"])
    part = {"data": {"k": 1}} if version == V1 else {"kind": "data", "data": {"k": 1}}

    task = caller.send("json-echo", version, message={"parts": [part]})

    assert state_of(task) == "completed"
    assert task["artifacts"][0]["parts"][0]["data"] == {"k": 1}


@pytest.fixture
def strict(db: None) -> Agent:
    extensions = [{"uri": REQUIRED_EXTENSION, "description": "Must be used.", "required": True}]
    return make_agent("strict", **SECURED, extensions=extensions)


@pytest.mark.parametrize("version", VERSIONS)
def test_it_requires_a_required_extension_to_be_declared(
    caller: Caller, strict: Agent, version: str
) -> None:
    error = caller.error("strict", version, "send")

    assert error["code"] == -32008
    message = (
        f"This agent requires the extension {REQUIRED_EXTENSION}; "
        "declare it in the A2A-Extensions header."
    )
    assert error == hub_error(version, -32008, message, "EXTENSION_SUPPORT_REQUIRED")
    if version == V1:
        assert error_info(error)["reason"] == "EXTENSION_SUPPORT_REQUIRED"


@pytest.mark.parametrize("version", VERSIONS)
def test_it_works_when_the_required_extension_is_declared(
    caller: Caller, strict: Agent, version: str
) -> None:
    response = caller.rpc(
        "strict", version, "send", headers={"A2A-Extensions": f"urn:other, {REQUIRED_EXTENSION}"}
    )

    assert state_of(task_of(result_of(response), version)) == "completed"


# -- non-blocking sends -------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_workers")
@pytest.mark.parametrize("version", VERSIONS)
def test_it_returns_a_stored_task_at_once_that_a_worker_completes_later(
    caller: Caller, slow_agent: Callable[..., Agent], version: str
) -> None:
    slow_agent()

    task = caller.send("slow", version, "0.3", configuration=NON_BLOCKING[version])

    assert state_of(task) in {"submitted", "working"}
    stored = caller.get("slow", version, task["id"])
    assert stored["id"] == task["id"]
    assert not is_terminal(stored)
    done = caller.wait_for("slow", task["id"], is_terminal)
    assert state_of(done) == "completed"
    assert artifact_texts(done) == ["Worked for 0.3 seconds."]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_workers")
def test_it_waits_for_a_worker_task_when_blocking(
    caller: Caller, slow_agent: Callable[..., Agent]
) -> None:
    slow_agent()

    task = caller.send("slow", V1, "0.2")

    assert state_of(task) == "completed"


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("version", VERSIONS)
async def test_it_returns_at_once_while_an_inline_agent_keeps_working(
    async_caller: AsyncCaller, slow_agent: Callable[..., Agent], version: str
) -> None:
    await sync_to_async(slow_agent)("slow-inline", "inline")

    task = await async_caller.send(
        "slow-inline", version, "0.3", configuration=NON_BLOCKING[version]
    )

    assert state_of(task) in {"submitted", "working"}
    done = await async_caller.wait_for("slow-inline", task["id"], is_terminal)
    assert state_of(done) == "completed"
    assert artifact_texts(done) == ["Worked for 0.3 seconds."]
