"""GetTask (1.0) and tasks/get (0.3): the caller's own task, with as much history as asked."""

from __future__ import annotations

import pytest

from agents.models import Agent
from tasks.models import Task
from tasks.reading import load_task
from tasks.wire import task_json
from tests.factories.envelopes import UNKNOWN_TASK, envelope
from tests.factories.errors import invalid_params, task_not_found, validation_failed
from tests.factories.versions import V03, V1, VERSIONS
from tests.protocol.answers import artifact_texts, error_info, error_of, field_of, state_of, texts
from tests.protocol.callers import Caller

pytestmark = pytest.mark.django_db

# A request without the task's id, refused by the SDK's validator (1.0) or the hub (0.3).
MISSING_ID = {
    V1: validation_failed("id", "Field is required."),
    V03: invalid_params(V03, "id", "Field required"),
}


def interviewed(caller: Caller, version: str) -> str:
    """A finished interview: its history holds four messages, question and answer twice."""
    task = caller.send("interview", version, "hello")
    caller.send("interview", version, "Ada", message={"taskId": task["id"], "messageId": "m-2"})
    return str(task["id"])


@pytest.mark.parametrize("version", VERSIONS)
def test_it_returns_the_callers_task(caller: Caller, echo: Agent, version: str) -> None:
    sent = caller.send("echo", version, "ping")

    task = caller.get("echo", version, sent["id"])

    assert task["id"] == sent["id"]
    assert task["contextId"] == sent["contextId"]
    assert state_of(task) == "completed"
    assert artifact_texts(task) == ["ping"]
    assert (task.get("kind") == "task") is (version != V1)


@pytest.mark.parametrize("version", VERSIONS)
def test_it_returns_the_whole_history_when_no_length_is_given(
    caller: Caller, interview: Agent, version: str
) -> None:
    task = caller.get("interview", version, interviewed(caller, version))

    assert [texts(m) for m in task["history"]] == [
        ["hello"],
        ["What is your name?"],
        ["Ada"],
        ["Thanks, Ada."],
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_it_returns_no_history_for_length_zero(
    caller: Caller, interview: Agent, version: str
) -> None:
    task = caller.get("interview", version, interviewed(caller, version), historyLength=0)

    assert task.get("history", []) == []
    assert state_of(task) == "completed"


@pytest.mark.parametrize("version", VERSIONS)
def test_it_returns_the_last_messages_for_a_positive_length(
    caller: Caller, interview: Agent, version: str
) -> None:
    task_id = interviewed(caller, version)

    last_two = caller.get("interview", version, task_id, historyLength=2)
    too_many = caller.get("interview", version, task_id, historyLength=10)

    assert [texts(m) for m in last_two["history"]] == [["Ada"], ["Thanks, Ada."]]
    assert len(too_many["history"]) == 4


@pytest.mark.parametrize("version", VERSIONS)
def test_it_refuses_a_negative_history_length(caller: Caller, echo: Agent, version: str) -> None:
    sent = caller.send("echo", version)

    error = caller.error("echo", version, "get", {"id": sent["id"], "historyLength": -1})

    assert error["code"] == -32602
    assert error == invalid_params(version, "historyLength", "must not be negative")


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("task_id", [UNKNOWN_TASK, "not-a-uuid"])
def test_it_returns_task_not_found_for_an_unknown_task(
    caller: Caller, echo: Agent, version: str, task_id: str
) -> None:
    error = caller.error("echo", version, "get", {"id": task_id})

    assert error["code"] == -32001
    if version == V1:
        assert error_info(error)["reason"] == "TASK_NOT_FOUND"
    assert error == task_not_found(version, task_id)


@pytest.mark.parametrize("version", VERSIONS)
def test_it_returns_task_not_found_for_another_callers_task(
    caller: Caller, stranger: Caller, echo: Agent, version: str
) -> None:
    sent = caller.send("echo", version, "secret")

    error = stranger.error("echo", version, "get", {"id": sent["id"]})

    assert error["code"] == -32001
    assert error == task_not_found(version, sent["id"])
    assert "secret" not in str(error)


@pytest.mark.parametrize("version", VERSIONS)
def test_it_returns_task_not_found_for_a_task_of_another_agent(
    caller: Caller, echo: Agent, interview: Agent, version: str
) -> None:
    sent = caller.send("echo", version)

    error = caller.error("interview", version, "get", {"id": sent["id"]})

    assert error["code"] == -32001


@pytest.mark.parametrize("version", VERSIONS)
def test_it_refuses_a_request_without_an_id_naming_the_field(
    caller: Caller, echo: Agent, version: str
) -> None:
    body = envelope(version, "get")
    del body["params"]["id"]

    error = error_of(caller.post("echo", body, version))

    assert error["code"] == -32602
    assert error == MISSING_ID[version]


@pytest.mark.parametrize("version", VERSIONS)
def test_it_refuses_a_history_length_that_is_not_a_number(
    caller: Caller, echo: Agent, version: str
) -> None:
    error = caller.error("echo", version, "get", {"historyLength": "all"})

    assert error["code"] == -32602
    assert field_of(error, version) == "historyLength"
    assert error["message"].startswith("Invalid params: historyLength: ")  # then the parser's words


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("length", [None, 0, 1, 3])
def test_it_answers_the_task_as_stored_with_every_field(
    caller: Caller, interview: Agent, version: str, length: int | None
) -> None:
    # Waiting for its answer: a status message, and metadata on the messages and the task.
    sent = caller.send("interview", version, "hello", message={"metadata": {"n": 1, "s": "x"}})
    Task.objects.filter(id=sent["id"]).update(metadata={"from": "test", "list": [1, 2.5]})
    params = {} if length is None else {"historyLength": length}

    answer = caller.get("interview", version, sent["id"], **params)

    stored = load_task(Task.objects.get(id=sent["id"]), length)  # the ORM's reading
    assert answer == task_json(stored, version)
    assert answer["status"].get("message") and answer["metadata"]["from"] == "test"
    assert len(answer.get("history", [])) == min(2, 2 if length is None else length)
