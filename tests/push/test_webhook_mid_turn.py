"""A webhook set while a runner is mid-turn: the runner believed the task had none, yet the
events it writes after the webhook exists reach the webhook (its one-statement write is
refused for a task with webhooks, and the write goes through the transaction that creates
the deliveries)."""

from __future__ import annotations

import pytest
from a2a.types import a2a_pb2 as pb
from asgiref.sync import async_to_sync

from push.configs import create_config
from tasks import writer
from tasks.changes import Known, NewTask, StatusChange
from tasks.models import Task, TaskState
from tests.factories.agents import make_agent
from tests.factories.messages import user_message
from tests.factories.versions import V1
from tests.push.callers import deliveries_of
from tests.push.receiver import Receiver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("push_settings")]

OWNER = "apikey:mid-turn"


def test_events_written_after_a_webhook_was_set_mid_turn_are_delivered(
    receiver: Receiver,
) -> None:
    agent = make_agent("mid-turn")
    spec = NewTask(agent_id=agent.pk, owner=OWNER, context_id="ctx", message=user_message(),
                   protocol_version=V1, execution_mode="worker")  # fmt: skip
    async_to_sync(writer.open)(spec)
    known = Known("ctx", 1, {}, push_enabled=False)  # as the runner claimed it
    create_config(Task.objects.get(id=spec.id), pb.TaskPushNotificationConfig(url=receiver.url))

    async_to_sync(writer.record)(
        spec.id, TaskState.SUBMITTED, [StatusChange(TaskState.COMPLETED)], known
    )

    assert [d.sequence for d in deliveries_of(str(spec.id))] == [2]
    assert len(receiver.wait_for(1)) == 1
    assert known.push_enabled is True
