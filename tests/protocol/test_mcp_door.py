"""The hub as an MCP server (`/mcp`), through the official `mcp` client: which agents a
caller sees as tools, calling them, continuing a task that asks for input, and refusals as
tool errors.

Personas: `caller` holds an API key good for every agent; anonymous holds none and sees and
calls only open agents."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from agents.models import Access, Agent
from tests.door_client import Door
from tests.factories.agents import make_agent, secured_agent
from tests.protocol.callers import Caller
from tests.protocol.mcp_clients import blocks, call, in_session, structured, tool_names


@pytest.fixture
def open_echo(db: None) -> Agent:
    return make_agent("open-echo")


@pytest.fixture
def locked(db: None) -> Agent:
    return secured_agent("locked", access=Access.SIGNED_IN)


def test_an_anonymous_client_sees_only_open_agents(
    door: Door, open_echo: Agent, locked: Agent
) -> None:
    assert tool_names() == ["open-echo"]


def test_a_client_with_a_key_sees_the_agent_that_needs_it(
    door: Door, caller: Caller, open_echo: Agent, locked: Agent
) -> None:
    assert tool_names(caller.key) == ["locked", "open-echo"]


def test_agents_not_in_the_catalog_or_disabled_are_not_tools(door: Door, open_echo: Agent) -> None:
    make_agent("hidden", public=False)
    make_agent("off", enabled=False)
    assert tool_names() == ["open-echo"]


def test_an_agent_that_requires_an_extension_is_a_tool_only_for_who_declares_it(
    door: Door, open_echo: Agent
) -> None:
    uri = "urn:example:required"
    make_agent("strict", extensions=[{"uri": uri, "required": True}])
    assert tool_names() == ["open-echo"]
    assert tool_names(headers={"A2A-Extensions": uri}) == ["open-echo", "strict"]


def test_calling_a_tool_sends_the_message_and_answers_with_the_task(
    door: Door, open_echo: Agent
) -> None:
    result = call("open-echo", {"message": "hello over MCP"})
    assert result.is_error is False
    texts = [block.text for block in blocks(result) if block.type == "text"]
    assert any("hello over MCP" in text for text in texts[1:])
    assert structured(result)["state"] == "completed"
    assert texts[0] == f"Task {structured(result)['taskId']} is completed."


def test_the_task_it_makes_says_it_came_through_mcp(door: Door, open_echo: Agent) -> None:
    from tasks.models import Task

    result = call("open-echo", {"message": "hi"})
    task = Task.objects.get(id=structured(result)["taskId"])
    assert (task.binding, task.owner) == ("MCP", "anonymous")


def test_a_task_that_asks_for_input_is_continued_with_its_id(door: Door, caller: Caller) -> None:
    secured_agent("interview", "interview")
    first = call("interview", {"message": "Hi!"}, caller.key)
    assert structured(first)["state"] == "input-required"
    task_id = structured(first)["taskId"]
    assert f'taskId "{task_id}"' in blocks(first)[0].text
    second = call("interview", {"message": "Ada", "taskId": task_id}, caller.key)
    assert structured(second)["taskId"] == task_id
    assert structured(second)["state"] == "completed"
    assert any("Ada" in block.text for block in blocks(second) if block.type == "text")


def test_a_tool_refused_for_want_of_credentials_is_a_tool_error_saying_why(
    door: Door, locked: Agent
) -> None:
    result = call("locked", {"message": "hi"})
    assert result.is_error is True
    assert blocks(result)[0].text == "This agent needs credentials."


def test_a_key_the_hub_never_issued_is_a_tool_error(door: Door, locked: Agent) -> None:
    result = call("locked", {"message": "hi"}, "a2a_000000000000_not-a-key-this-hub-issued")
    assert (result.is_error, blocks(result)[0].text) == (True, "The credentials are not valid.")


def test_another_callers_task_is_not_found(door: Door, caller: Caller, stranger: Caller) -> None:
    secured_agent("interview", "interview")
    task_id = call("interview", {"message": "Hi!"}, caller.key).structured_content["taskId"]
    result = call("interview", {"message": "Ada", "taskId": task_id}, stranger.key)
    assert result.is_error is True
    assert "not found" in blocks(result)[0].text.lower()


def test_arguments_outside_the_schema_are_a_tool_error_naming_the_problem(
    door: Door, open_echo: Agent
) -> None:
    missing = call("open-echo", {})
    assert missing.is_error is True
    assert "'message' is a required property" in blocks(missing)[0].text
    wrong_skill = call("open-echo", {"message": "hi", "skill": "nope"})
    assert wrong_skill.is_error is True
    assert "(skill)" in blocks(wrong_skill)[0].text


def test_an_agent_over_its_rate_limit_is_a_tool_error(door: Door) -> None:
    make_agent("limited", requests_per_minute=1)
    assert call("limited", {"message": "one"}).is_error is False
    refused = call("limited", {"message": "two"})
    assert refused.is_error is True
    assert "per minute" in blocks(refused)[0].text


def test_an_unknown_tool_is_a_protocol_error(door: Door, open_echo: Agent) -> None:
    async def calling(session: ClientSession) -> int | None:
        try:
            await session.call_tool("no-such-agent", {"message": "hi"})
        except MCPError as exc:
            return exc.code
        return None

    assert in_session(calling) == -32602


def test_a_body_over_the_limit_is_refused_before_it_is_read(door: Door, settings: object) -> None:
    settings.A2A_MAX_REQUEST_BYTES = 1000  # type: ignore[attr-defined]
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "pad": "x" * 2000})
    response = door.post("/mcp", body, content_type="application/json",
                         headers={"Accept": "application/json, text/event-stream"})  # fmt: skip
    assert response.status_code == 413
    assert response.json()["error"] == {
        "code": -32600,
        "message": "The request body is over 1000 bytes.",
    }


def test_a_malformed_request_gets_a_json_rpc_error(door: Door) -> None:
    response = door.post("/mcp", "{not json", content_type="application/json",
                         headers={"Accept": "application/json, text/event-stream"})  # fmt: skip
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700


def test_the_server_says_the_name_and_version_its_server_card_says(door: Door) -> None:
    from registry.mcp_card import SERVER_VERSION

    async def info(session: ClientSession) -> Any:
        return session.server_info

    server = in_session(info)
    assert (server.name, server.version) == ("a2a-hub", SERVER_VERSION)


def test_a_call_naming_a_task_still_working_says_how_it_is_doing_and_sends_nothing(
    door: Door, settings: Any
) -> None:
    # The blocking send stops waiting at once; the agent works for a minute meanwhile.
    settings.A2A_BLOCKING_TIMEOUT_SECONDS = 0.1
    make_agent("slow", executor_kind="slow", executor_settings={"step": 0.1})
    # Not finished: submitted, or working once its turn has begun (on a busy machine it may
    # not have begun within the tenth of a second).
    unfinished = ("submitted", "working")
    started = call("slow", {"message": "60"})
    assert structured(started)["state"] in unfinished
    task_id = structured(started)["taskId"]
    assert "has not finished" in blocks(started)[0].text
    again = call("slow", {"message": "are you done?", "taskId": task_id})
    assert structured(again)["taskId"] == task_id
    assert structured(again)["state"] in unfinished
    from tasks.models import Message

    sent = Message.objects.filter(task_id=task_id, role="user").values_list("parts", flat=True)
    assert list(sent) == [[{"text": "60"}]]
    cancel = {"jsonrpc": "2.0", "id": 1, "method": "CancelTask", "params": {"id": task_id}}
    canceled = door.post("/agents/slow/jsonrpc", json.dumps(cancel), headers={"A2A-Version": "1.0"})
    assert canceled.json()["result"]["status"]["state"] == "TASK_STATE_CANCELED"
