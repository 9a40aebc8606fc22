"""A push config sent with a follow-up message belongs to that message: it is stored only when
the task takes the message, and then it hears the events of the turn the message starts."""

from __future__ import annotations

from typing import Any

import pytest

from agents.models import Agent
from push.models import PushNotificationConfig
from tasks.models import Task, TaskState
from tests.factories.agents import SECURED, make_agent
from tests.factories.messages import wire_message
from tests.factories.push import webhook
from tests.factories.versions import V1, VERSIONS
from tests.push.callers import Caller, deliveries_of
from tests.push.receiver import Receiver

pytestmark = pytest.mark.django_db


@pytest.fixture
def asker(db: None) -> Agent:
    """Asks for a name, then answers: the second message continues the same task."""
    return make_agent("asker", executor_kind="interview", push_notifications=True, **SECURED)


def follow_up(version: str, task_id: str, url: str) -> dict[str, Any]:
    configuration: dict[str, Any] = (
        {"returnImmediately": False, "taskPushNotificationConfig": webhook(version, url)}
        if version == V1
        else {"blocking": True, "pushNotificationConfig": webhook(version, url)}
    )
    return {"message": wire_message(version, "Ada", task_id=task_id),
            "configuration": configuration}  # fmt: skip


@pytest.mark.parametrize("version", VERSIONS)
def test_a_follow_up_the_task_refuses_leaves_no_push_config(
    caller: Caller, asker: Agent, push_settings: Any, receiver: Receiver, version: str
) -> None:
    task_id = caller.send("asker", version)["id"]
    Task.objects.filter(id=task_id).update(state=TaskState.WORKING)  # another turn runs

    error = caller.error("asker", version, "send", follow_up(version, task_id, receiver.url))

    assert error["code"] == -32004
    assert not PushNotificationConfig.objects.filter(task_id=task_id).exists()
    assert Task.objects.get(id=task_id).push_enabled is False
    assert deliveries_of(task_id) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_a_follow_up_the_task_takes_stores_its_config_for_the_turn_it_starts(
    caller: Caller, asker: Agent, push_settings: Any, receiver: Receiver, version: str
) -> None:
    first = caller.send("asker", version)
    before = Task.objects.get(id=first["id"]).last_sequence

    result = caller.result("asker", version, "send", follow_up(version, first["id"], receiver.url))

    task = result["task"] if version == V1 else result
    assert task["id"] == first["id"]
    assert PushNotificationConfig.objects.get(task_id=first["id"]).url == receiver.url
    sequences = [d.sequence for d in deliveries_of(first["id"])]
    last = Task.objects.get(id=first["id"]).last_sequence
    assert sequences == list(range(before + 1, last + 1))
