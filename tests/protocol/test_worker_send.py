"""A blocking send to a worker-mode agent answers with the task as the worker left it.

The worker's job replies to the waiting request with the finished task, so the answer is the
whole task (history and artifacts, as a `GetTask` shows it) without a second read; the
request's `historyLength` applies to it as to any other answer.
"""

from __future__ import annotations

import pytest

from agents.models import Agent
from tests.factories.agents import secured_agent
from tests.factories.versions import V1, VERSIONS
from tests.protocol.answers import artifact_texts, state_of, texts
from tests.protocol.callers import Caller

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("in_process_workers"),
]


@pytest.fixture
def echo_worker(db: None) -> Agent:
    return secured_agent("echo-worker", execution_mode="worker")


@pytest.mark.parametrize("version", VERSIONS)
def test_it_answers_with_the_completed_task_its_artifacts_and_history(
    caller: Caller, echo_worker: Agent, version: str
) -> None:
    task = caller.send("echo-worker", version, "ping")

    assert state_of(task) == "completed"
    assert artifact_texts(task) == ["ping"]
    assert [texts(m) for m in task["history"]] == [["ping"]]
    assert task == caller.get("echo-worker", version, task["id"])


@pytest.mark.parametrize("version", VERSIONS)
def test_it_applies_the_history_length_to_the_finished_task(
    caller: Caller, echo_worker: Agent, version: str
) -> None:
    task = caller.send("echo-worker", version, "ping", configuration={"historyLength": 0})

    assert state_of(task) == "completed"
    assert not task.get("history")
    assert artifact_texts(task) == ["ping"]


def test_a_follow_up_on_a_worker_answers_with_the_whole_conversation(
    caller: Caller, db: None
) -> None:
    secured_agent("interview-worker", "interview", execution_mode="worker")
    asked = caller.send("interview-worker", V1, "hello")
    assert state_of(asked) == "input-required"

    done = caller.send("interview-worker", V1, "Ada", message={"taskId": asked["id"]})

    assert state_of(done) == "completed"
    assert len(done["history"]) == len(asked["history"]) + 2  # the answer, then the reply
    assert done == caller.get("interview-worker", V1, asked["id"])
