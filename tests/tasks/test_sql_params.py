"""The parameters of a task's rows, as the one-statement writes send them (PostgreSQL), are
what Django itself would save: the shortcut per kind of field changes nothing stored."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb
from django.db.models import Model
from psycopg.types.json import Jsonb

from tasks import sql
from tasks.lifecycle import ArtifactChange, NewTask, StatusChange, plan_open
from tasks.models import TaskState


def rows() -> list[list[Model]]:
    message = pb.Message(message_id="m-1", role=pb.ROLE_USER, reference_task_ids=["t-0"])
    message.parts.add(text="hello")
    message.metadata.update({"trace": "abc", "n": 2})
    spec = NewTask(
        agent_id=1, owner="apikey:x", context_id="ctx", message=message, protocol_version="1.0",
        execution_mode="inline", metadata={"k": "v"}, id=uuid.uuid4(),
    )  # fmt: skip
    artifact = pb.Artifact(artifact_id="a-1", name="out", description="d")
    artifact.parts.add(text="chunk")
    reply = pb.Message(message_id="m-2", role=pb.ROLE_AGENT)
    reply.parts.add(text="done")
    changes = [
        StatusChange(TaskState.WORKING),
        ArtifactChange(artifact, last_chunk=True),
        StatusChange(TaskState.COMPLETED, reply),
    ]
    task, writer, _ = plan_open(spec, changes, runner="host:1")
    return [[task], writer.messages, writer.artifacts, writer.events]


def comparable(value: Any) -> Any:
    return ("jsonb", value.obj) if isinstance(value, Jsonb) else value


@pytest.mark.parametrize("index", range(4), ids=["task", "messages", "artifacts", "events"])
def test_row_parameters_are_what_django_would_save(index: int) -> None:
    group = rows()[index]
    db = sql.builder()
    fields = sql.inserted_fields(type(group[0]))
    by_django = [f.get_db_prep_save(f.pre_save(obj, True), db) for obj in group for f in fields]

    assert [comparable(v) for v in sql.row_params(group)] == [comparable(v) for v in by_django]
