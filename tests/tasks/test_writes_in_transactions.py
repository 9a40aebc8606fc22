"""A write on Django's connection inside a transaction leaves the transaction usable, also from
a streaming request's context, whose writes otherwise give the connection back at once."""

from __future__ import annotations

import uuid

import pytest
from a2a.types import a2a_pb2 as pb
from asgiref.sync import async_to_sync

from agents.models import Agent
from tasks import writer
from tasks.changes import NewTask, StatusChange
from tasks.models import Task, TaskState
from tasks.stores import release_after_write

pytestmark = pytest.mark.django_db


def test_a_write_in_a_transaction_from_a_streaming_context_keeps_the_transaction() -> None:
    agent = Agent.objects.create(slug="kept", name="Kept", description="-", executor_kind="echo")
    message = pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER)
    message.parts.add(text="hi")
    spec = NewTask(agent_id=agent.pk, owner="apikey:kept", context_id="ctx", message=message,
                   protocol_version="1.0", execution_mode="inline")  # fmt: skip
    token = release_after_write.set(True)
    try:
        async_to_sync(writer.open)(spec, [StatusChange(TaskState.WORKING)])
        # The test's transaction is still there to read and write in.
        assert Task.objects.filter(id=spec.id).update(runner="still-here") == 1
    finally:
        release_after_write.reset(token)
    assert Task.objects.get(id=spec.id).state == TaskState.WORKING
