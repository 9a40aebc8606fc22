"""Multi-turn conversations with the interview agent: the first turn asks for input, a message
naming the task resumes it, and the answer completes it, in either version."""

from __future__ import annotations

import pytest

from agents.models import Agent
from tests.factories.agents import SECURED, make_agent
from tests.factories.versions import V03, V1, VERSIONS
from tests.protocol.answers import artifact_texts, state_of, texts
from tests.protocol.callers import Caller

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("version", VERSIONS)
def test_it_asks_for_input_on_the_first_turn(
    caller: Caller, interview: Agent, version: str
) -> None:
    task = caller.send("interview", version, "hi")

    assert state_of(task) == "input-required"
    assert texts(task["status"]["message"]) == ["What is your name?"]
    assert task.get("artifacts", []) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_it_completes_when_the_answer_comes(caller: Caller, interview: Agent, version: str) -> None:
    first = caller.send("interview", version, "hi")

    second = caller.send(
        "interview", version, "Grace",
        message={"taskId": first["id"], "contextId": first["contextId"], "messageId": "m-2"},
    )  # fmt: skip

    assert second["id"] == first["id"]
    assert second["contextId"] == first["contextId"]
    assert state_of(second) == "completed"
    assert artifact_texts(second) == ["Nice to meet you, Grace!"]
    assert texts(second["status"]["message"]) == ["Thanks, Grace."]
    assert [texts(m) for m in second["history"]] == [
        ["hi"], ["What is your name?"], ["Grace"], ["Thanks, Grace."],
    ]  # fmt: skip
    roles = [m["role"] for m in second["history"]]
    user, agent = ("ROLE_USER", "ROLE_AGENT") if version == V1 else ("user", "agent")
    assert roles == [user, agent, user, agent]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_follow_up_may_name_only_the_task(caller: Caller, interview: Agent, version: str) -> None:
    first = caller.send("interview", version)

    second = caller.send("interview", version, "Linus", message={"taskId": first["id"]})

    assert state_of(second) == "completed"
    assert second["contextId"] == first["contextId"]


@pytest.mark.parametrize("version", VERSIONS)
def test_it_asks_again_when_the_answer_is_empty(
    caller: Caller, interview: Agent, version: str
) -> None:
    first = caller.send("interview", version)

    again = caller.send("interview", version, "   ", message={"taskId": first["id"]})
    done = caller.send("interview", version, "Ada", message={"taskId": first["id"]})

    assert state_of(again) == "input-required"
    assert texts(again["status"]["message"]) == ["I did not catch that. What is your name?"]
    assert state_of(done) == "completed"
    assert len(done["history"]) == 6


@pytest.mark.parametrize(("start", "follow"), [(V1, V03), (V03, V1)])
def test_a_conversation_may_change_protocol_version_half_way(
    caller: Caller, interview: Agent, start: str, follow: str
) -> None:
    first = caller.send("interview", start)

    second = caller.send("interview", follow, "Barbara", message={"taskId": first["id"]})

    assert state_of(second) == "completed"
    assert artifact_texts(second) == ["Nice to meet you, Barbara!"]


@pytest.mark.parametrize("version", VERSIONS)
def test_it_asks_the_question_the_agent_is_configured_with(caller: Caller, version: str) -> None:
    make_agent("quest", executor_kind="interview",
               executor_settings={"question": "What is your quest?"}, **SECURED)  # fmt: skip

    task = caller.send("quest", version)

    assert texts(task["status"]["message"]) == ["What is your quest?"]


@pytest.mark.parametrize("version", VERSIONS)
def test_another_caller_cannot_answer(
    caller: Caller, stranger: Caller, interview: Agent, version: str
) -> None:
    first = caller.send("interview", version)

    error = stranger.error("interview", version, "send", text="Eve",
                           message={"taskId": first["id"]})  # fmt: skip

    assert error["code"] == -32001
    resumed = caller.send("interview", version, "Alice", message={"taskId": first["id"]})
    assert artifact_texts(resumed) == ["Nice to meet you, Alice!"]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_finished_conversation_takes_no_more_messages(
    caller: Caller, interview: Agent, version: str
) -> None:
    first = caller.send("interview", version)
    caller.send("interview", version, "Ada", message={"taskId": first["id"]})

    error = caller.error("interview", version, "send", text="Again",
                         message={"taskId": first["id"]})  # fmt: skip

    assert error["code"] == -32004
