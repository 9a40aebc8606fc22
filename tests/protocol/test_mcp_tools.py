"""What the MCP door says about agents and answers: tool names, descriptions and input
schemas, argument checks, and A2A parts, tasks and messages as MCP content."""

from __future__ import annotations

import base64

import pytest
from a2a.types import a2a_pb2 as pb
from google.protobuf import struct_pb2

from agents.models import Agent, Skill
from protocol.mcp_tools import (
    BadArguments,
    answer_result,
    read_arguments,
    tool_name,
    tool_of,
)
from tests.factories.agents import make_agent
from tests.protocol.mcp_clients import blocks, structured


def test_a_slug_is_its_tool_name() -> None:
    assert tool_name("weather-bot_2") == "weather-bot_2"


def test_characters_mcp_names_do_not_take_become_underscores() -> None:
    assert tool_name("météo bot") == "m_t_o_bot"
    assert len(tool_name("x" * 300)) == 128


@pytest.fixture
def weather(db: None) -> Agent:
    agent = make_agent("weather", skills=2, description="Tells the weather.")
    Skill.objects.create(agent=agent, skill_id="secret", name="Secret", description="Hidden.",
                         extended_only=True, position=9)  # fmt: skip
    return agent


def test_the_description_says_the_card_and_its_skills(weather: Agent) -> None:
    tool = tool_of(weather, extended=False)
    assert tool.title == "Weather"
    assert tool.description is not None
    assert tool.description.startswith("Tells the weather.\n- Skill weather-skill-0 (Skill 0)")
    assert "Examples: hello" in tool.description
    assert "secret" not in tool.description


def test_the_schema_takes_a_message_and_optionally_a_skill_task_and_context(
    weather: Agent,
) -> None:
    schema = tool_of(weather, extended=False).input_schema
    assert schema["required"] == ["message"]
    assert set(schema["properties"]) == {"message", "skill", "taskId", "contextId"}
    assert schema["properties"]["skill"]["enum"] == ["weather-skill-0", "weather-skill-1"]
    assert schema["additionalProperties"] is False


def test_a_caller_with_credentials_may_name_the_extended_cards_skills(weather: Agent) -> None:
    tool = tool_of(weather, extended=True)
    assert "secret" in tool.input_schema["properties"]["skill"]["enum"]


def test_arguments_are_read_from_the_schema(weather: Agent) -> None:
    tool = tool_of(weather, extended=False)
    args = read_arguments(tool, {"message": "hi", "skill": "weather-skill-1", "taskId": "t"})
    assert (args.message, args.skill, args.task_id, args.context_id) == (
        "hi",
        "weather-skill-1",
        "t",
        "",
    )


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (None, "'message' is a required property"),
        ({"message": 3}, "(message): 3 is not of type 'string'"),
        ({"message": ""}, "(message)"),
        ({"message": "hi", "extra": 1}, "Additional properties are not allowed"),
    ],
)
def test_bad_arguments_are_refused_naming_the_problem(
    weather: Agent, arguments: object, said: str
) -> None:
    with pytest.raises(BadArguments, match=None) as raised:
        read_arguments(tool_of(weather, extended=False), arguments)  # type: ignore[arg-type]
    assert said in str(raised.value)


def task_with(state: pb.TaskState, parts: list[pb.Part], status_text: str = "") -> pb.Task:
    task = pb.Task(id="t-1", context_id="c-1", status=pb.TaskStatus(state=state))
    if status_text:
        task.status.message.CopyFrom(
            pb.Message(message_id="m", role=pb.ROLE_AGENT, parts=[pb.Part(text=status_text)])
        )
    task.artifacts.append(pb.Artifact(artifact_id="a-1", parts=parts))
    return task


def test_a_completed_tasks_parts_become_content_in_order() -> None:
    data = struct_pb2.Value()
    data.struct_value.update({"temp": 21})
    parts = [
        pb.Part(text="Sunny."),
        pb.Part(data=data),
        pb.Part(raw=b"\x89PNG", media_type="image/png", filename="map.png"),
        pb.Part(raw=b"%PDF", media_type="application/pdf", filename="report.pdf"),
        pb.Part(url="https://example.com/f.csv", media_type="text/csv", filename="f.csv"),
    ]
    result = answer_result(task_with(pb.TASK_STATE_COMPLETED, parts), "weather")
    kinds = [block.type for block in blocks(result)]
    assert kinds == ["text", "text", "text", "image", "resource", "resource_link"]
    assert blocks(result)[0].text == "Task t-1 is completed."
    assert blocks(result)[2].text == '{\n  "temp": 21\n}'
    assert blocks(result)[3].data == base64.b64encode(b"\x89PNG").decode()
    assert blocks(result)[4].resource.uri == "a2a-hub://tasks/t-1/artifacts/a-1/report.pdf"
    assert blocks(result)[5].uri == "https://example.com/f.csv"
    assert structured(result) == {
        "taskId": "t-1", "contextId": "c-1", "state": "completed", "data": [{"temp": 21}],
    }  # fmt: skip
    assert result.is_error is False


def test_a_task_waiting_for_input_says_how_to_continue_it() -> None:
    task = task_with(pb.TASK_STATE_INPUT_REQUIRED, [], status_text="What is your name?")
    result = answer_result(task, "interview")
    assert blocks(result)[0].text == (
        "Task t-1 is input-required. The agent is waiting for you: call interview again with "
        'taskId "t-1" and your reply as message.'
    )
    assert blocks(result)[1].text == "What is your name?"
    assert structured(result)["state"] == "input-required"


def test_a_task_still_working_says_so() -> None:
    result = answer_result(task_with(pb.TASK_STATE_WORKING, []), "slow")
    assert "has not finished" in blocks(result)[0].text
    assert result.is_error is False


def test_a_failed_task_is_a_tool_error() -> None:
    task = task_with(pb.TASK_STATE_FAILED, [], status_text="The backend timed out.")
    result = answer_result(task, "weather")
    assert result.is_error is True
    assert blocks(result)[1].text == "The backend timed out."


def test_a_message_answer_is_its_parts() -> None:
    message = pb.Message(message_id="m-1", context_id="c-1", role=pb.ROLE_AGENT,
                         parts=[pb.Part(text="Hello.")])  # fmt: skip
    result = answer_result(message, "greeter")
    assert [block.text for block in blocks(result)] == ["Hello."]
    assert structured(result) == {"contextId": "c-1", "messageId": "m-1"}
