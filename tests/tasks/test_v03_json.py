"""0.3 stream events mapped directly from stored 1.0 JSON must be exactly what the official
SDK's conversions make of them; shapes the direct mapping does not know go the SDK's way."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb

from tasks import v03_json
from tasks.wire import V03, event_ends_stream, stream_event_json, stream_event_json_by_sdk, to_json

STATES = [s for s in pb.TaskState.values() if s != pb.TASK_STATE_UNSPECIFIED]


def text(value: str, **metadata: Any) -> pb.Part:
    part = pb.Part(text=value)
    if metadata:
        part.metadata.update(metadata)
    return part


def files() -> list[pb.Part]:
    return [
        pb.Part(raw=b"tck", filename="output.txt", media_type="text/plain"),
        pb.Part(raw=b"\x00\xff"),
        pb.Part(url="https://example.com/output.txt", filename="output.txt"),
        pb.Part(url="https://example.com/a.png", media_type="image/png"),
    ]


def agent_message(*parts: pb.Part, **extra: Any) -> pb.Message:
    message = pb.Message(message_id="m-1", role=pb.ROLE_AGENT, task_id="t-1", context_id="c-1")
    message.parts.extend(parts)
    for key, value in extra.items():
        if key == "metadata":
            message.metadata.update(value)
        else:
            getattr(message, key).extend(value)
    return message


def status_events() -> list[dict[str, Any]]:
    found = []
    messages = [None, agent_message(text("Working on it.")),
                agent_message(text("See"), *files(), reference_task_ids=["t-0"],
                              extensions=["https://ext.example/x"], metadata={"n": 1})]  # fmt: skip
    for state, message, metadata in itertools.product(STATES, messages, [None, {"step": 2}]):
        status = pb.TaskStatus(state=state)
        status.timestamp.FromJsonString("2026-11-22T06:32:28.217546Z")
        if message is not None:
            status.message.CopyFrom(message)
        update = pb.TaskStatusUpdateEvent(task_id="t-1", context_id="c-1", status=status)
        if metadata:
            update.metadata.update(metadata)
        found.append({"statusUpdate": to_json(update)})
    return found


def artifact_events() -> list[dict[str, Any]]:
    found = []
    part_sets = [[text("chunk 0: hello")], [text("a", source="x"), text("b")], files()]
    for parts, append, last, extra in itertools.product(
        part_sets, [False, True], [False, True], [False, True]
    ):
        artifact = pb.Artifact(artifact_id="a-1", name="echo" if extra else "")
        artifact.parts.extend(parts)
        if extra:
            artifact.description = "what it is"
            artifact.extensions.append("https://ext.example/x")
            artifact.metadata.update({"k": "v"})
        update = pb.TaskArtifactUpdateEvent(
            task_id="t-1", context_id="c-1", artifact=artifact, append=append, last_chunk=last
        )
        found.append({"artifactUpdate": to_json(update)})
    return found


def task_events() -> list[dict[str, Any]]:
    found = []
    for state in STATES:
        task = pb.Task(id="t-1", context_id="c-1", status=pb.TaskStatus(state=state))
        task.status.timestamp.FromJsonString("2026-11-22T06:32:28Z")
        user = pb.Message(message_id="u-1", role=pb.ROLE_USER, task_id="t-1", context_id="c-1")
        user.parts.append(text("hi"))
        task.history.extend([user, agent_message(text("hello"))])
        artifact = pb.Artifact(artifact_id="a-1", name="echo")
        artifact.parts.extend([text("hi"), *files()])
        task.artifacts.append(artifact)
        task.metadata.update({"origin": "test"})
        found.append({"task": to_json(task)})
    return found


COMMON = status_events() + artifact_events() + task_events()


@pytest.mark.parametrize("payload", COMMON)
def test_the_direct_mapping_equals_the_sdks_conversion(payload: dict[str, Any]) -> None:
    direct = v03_json.event(payload, final=event_ends_stream(payload))

    assert direct is not None, payload
    assert direct == stream_event_json_by_sdk(payload)


def test_shapes_it_does_not_know_go_the_sdks_way() -> None:
    data = pb.Artifact(artifact_id="a-2")
    data.parts.append(pb.Part(data=_value({"key": "value", "count": 42})))
    typed = pb.Artifact(artifact_id="a-3")
    typed.parts.append(pb.Part(text="# Title", media_type="text/markdown"))
    for artifact in (data, typed):
        payload = {"artifactUpdate": to_json(pb.TaskArtifactUpdateEvent(
            task_id="t-1", context_id="c-1", artifact=artifact))}  # fmt: skip
        assert v03_json.event(payload, final=False) is None
        assert stream_event_json(payload, V03) == stream_event_json_by_sdk(payload)
    assert stream_event_json(payload, V03)["artifact"]["parts"][0]["text"] == "# Title"


def _value(value: dict[str, Any]) -> Any:
    from google.protobuf import struct_pb2

    wrapped = struct_pb2.Value()
    wrapped.struct_value.update(value)
    return wrapped
