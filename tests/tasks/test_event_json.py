"""The events a turn writes are built key by key; each must be exactly the protobuf JSON of the
1.0 event it stands for, as clients of either version and the stored history read it."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb

from tasks.changes import ArtifactChange, Plan, StatusChange
from tasks.models import Task, TaskState
from tasks.wire import STATE_TO_PB, to_json

NOW = dt.datetime(2026, 11, 24, 4, 21, 2, 969438, tzinfo=dt.UTC)
NOW_WHOLE_SECOND = dt.datetime(2026, 11, 24, 4, 21, 2, tzinfo=dt.UTC)


def writer(now: dt.datetime = NOW) -> Plan:
    task = Task(id=uuid.uuid4(), context_id="ctx-1", state=TaskState.WORKING)
    return Plan(task, 0, now)


def agent_message(text: str) -> pb.Message:
    message = pb.Message(message_id="m-1", role=pb.ROLE_AGENT)
    message.parts.add(text=text)
    return message


def artifacts() -> list[tuple[pb.Artifact, bool, bool]]:
    plain = pb.Artifact(artifact_id="a-1", name="echo")
    plain.parts.add(text="hello")
    described = pb.Artifact(artifact_id="a-2", name="report", description="The whole report")
    described.parts.add(text="chunk", metadata={"n": 1})
    described.parts.add().data.struct_value.update({"rows": [1, 2.5, "x"], "ok": True})
    described.parts.add(url="https://example.com/a.png", media_type="image/png")
    described.parts.add(raw=b"\x00\xff", filename="blob.bin")
    described.metadata.update({"source": "test", "count": 3})
    described.extensions.append("https://example.com/ext/v1")
    empty = pb.Artifact(artifact_id="a-3")
    return [(plain, False, False), (described, True, False), (empty, True, True),
            (plain, False, True)]  # fmt: skip


@pytest.mark.parametrize("artifact,append,last_chunk", artifacts())
def test_an_artifact_update_is_the_protobuf_json_of_the_event(
    artifact: pb.Artifact, append: bool, last_chunk: bool
) -> None:
    w = writer()
    w.artifact(ArtifactChange(artifact, append=append, last_chunk=last_chunk), {})

    expected = pb.TaskArtifactUpdateEvent(
        task_id=str(w.task.id), context_id="ctx-1", artifact=artifact, append=append,
        last_chunk=last_chunk,
    )  # fmt: skip
    assert w.events[0].payload == {"artifactUpdate": to_json(expected)}


@pytest.mark.parametrize("now", [NOW, NOW_WHOLE_SECOND])
@pytest.mark.parametrize("state", [s for s in TaskState if s != TaskState.SUBMITTED])
@pytest.mark.parametrize("text", [None, "Working on it"])
def test_a_status_update_is_the_protobuf_json_of_the_event(
    state: TaskState, text: str | None, now: dt.datetime
) -> None:
    w = writer(now)
    message = agent_message(text) if text is not None else None
    w.status(StatusChange(state, message), position=1)

    status = pb.TaskStatus(state=STATE_TO_PB[state])
    status.timestamp.FromDatetime(now)
    if message is not None:
        stamped = pb.Message()
        stamped.CopyFrom(message)
        stamped.task_id, stamped.context_id = str(w.task.id), "ctx-1"
        status.message.CopyFrom(stamped)
    expected = pb.TaskStatusUpdateEvent(task_id=str(w.task.id), context_id="ctx-1", status=status)
    payload: dict[str, Any] = w.events[0].payload
    assert payload == {"statusUpdate": to_json(expected)}
    assert w.task.status_message == (to_json(status.message) if message is not None else None)
