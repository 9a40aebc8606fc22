"""The gRPC door sends each stored stream event as the message json_format's ParseDict would
make of it, through its own plans (`protocol.grpc_events`): every event kind a turn stores, as
the database gives it back, is read by the plans alone and to the same message; anything else
gets ParseDict's answer, or its error."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb
from asgiref.sync import async_to_sync
from google.protobuf.json_format import ParseDict
from hypothesis import given
from hypothesis import strategies as st

from agents.models import Agent
from protocol.grpc_door import stream_response as door_response
from protocol.grpc_events import planned, stream_response
from tasks import reading, writer
from tasks.changes import ArtifactChange, NewTask, StatusChange
from tasks.models import Task, TaskState
from tasks.wire import to_json
from tests.factories.messages import user_message
from tests.fuzzing import json_values

S = TaskState
OWNER = "apikey:events"


def parsed(event: Any) -> pb.StreamResponse:
    return ParseDict(event, pb.StreamResponse(), ignore_unknown_fields=True)


def agent_message(text: str) -> pb.Message:
    message = pb.Message(
        message_id=uuid.uuid4().hex, role=pb.ROLE_AGENT, reference_task_ids=["t-0"],
        extensions=["https://example.com/x"],
    )  # fmt: skip
    message.parts.add(text=text, metadata={"step": 1, "ratio": 0.5})
    message.metadata.update({"by": "test", "nested": {"empty": {}, "list": []}})
    return message


def every_part_kind() -> pb.Artifact:
    artifact = pb.Artifact(artifact_id="report", name="report", description="All of it")
    artifact.parts.add(text="chunk", metadata={"n": 1})
    artifact.parts.add().data.struct_value.update({"rows": [1, 2.5, "x", None], "ok": True})
    artifact.parts.add().data.list_value.extend([1, "two"])
    artifact.parts.add().data.string_value = "plain"
    artifact.parts.add(url="https://example.com/a.png", media_type="image/png", filename="a.png")
    artifact.parts.add(raw=b"\x00\xff\xfe binary", filename="blob.bin",
                       media_type="application/octet-stream")  # fmt: skip
    artifact.parts.add(raw=b"")
    artifact.metadata.update({"source": "test", "count": 3, "none": None})
    artifact.extensions.append("https://example.com/ext/v1")
    return artifact


def a_turn_of_every_kind() -> list[Any]:
    plain = pb.Artifact(artifact_id="echo", name="echo")
    plain.parts.add(text="hello")
    more = pb.Artifact(artifact_id="echo")
    more.parts.add(text=" world")
    return [
        StatusChange(S.WORKING),
        StatusChange(S.WORKING, agent_message("Working on it")),
        ArtifactChange(plain),
        ArtifactChange(more, append=True),
        ArtifactChange(pb.Artifact(artifact_id="echo"), append=True, last_chunk=True),
        ArtifactChange(every_part_kind()),
        StatusChange(S.INPUT_REQUIRED, agent_message("Which one?")),
    ]


@pytest.fixture
def stored_events(db: None) -> list[dict[str, Any]]:
    """The events of a task that went through every kind of change, read back from the
    database (PostgreSQL's JSONB gives the members back in an order of its own)."""
    agent = Agent.objects.create(
        slug="events", name="Events", description="Its events are read.", executor_kind="echo"
    )
    message = user_message(parts=[pb.Part(text="hi"), pb.Part(url="https://example.com/in.txt")])
    spec = NewTask(agent_id=agent.pk, owner=OWNER, context_id="ctx", message=message,
                   protocol_version="1.0", execution_mode="inline",
                   metadata={"n": 1, "deep": {"a": [1, {"b": None}]}})  # fmt: skip
    async_to_sync(writer.open)(spec, a_turn_of_every_kind())
    follow_up = user_message("and this", task_id=str(spec.id), context_id="ctx")
    async_to_sync(writer.add_user_message)(spec.id, OWNER, follow_up)
    done = StatusChange(S.COMPLETED, agent_message("Done"))
    async_to_sync(writer.record)(spec.id, S.WORKING, [done])
    events = [payload for _, payload in reading.read_events(str(spec.id), 0)]
    # What a stream sends that is no stored event: a follow-up's or a re-attach's snapshot,
    # and the Message an agent may answer with instead of a task.
    snapshot = reading.load_task(Task.objects.get(id=spec.id), None)
    return [*events, {"task": to_json(snapshot)}, {"message": to_json(agent_message("Hi"))}]


def test_every_event_a_turn_stores_is_read_by_the_plans_as_parsedict_reads_it(
    stored_events: list[dict[str, Any]],
) -> None:
    kinds = {next(iter(event)) for event in stored_events}
    assert kinds == {"task", "statusUpdate", "artifactUpdate", "message"}
    for event in stored_events:
        assert planned(event) == parsed(event), event
        assert door_response((1, event)) == parsed(event)


def test_a_timestamp_in_any_form_is_read_as_parsedict_reads_it() -> None:
    for stamp in ["2026-11-27T17:00:00Z", "2026-11-27T17:00:00.1Z", "1970-01-01T00:00:00Z",
                  "2026-11-27T17:00:00.123456789Z", "0001-01-01T00:00:00Z",
                  "9999-12-31T23:59:59.999999999Z", "2026-11-27T17:00:00.5+01:30",
                  "1969-12-31T23:59:59.000001Z"]:  # fmt: skip
        event = {"statusUpdate": {"status": {"state": "TASK_STATE_WORKING", "timestamp": stamp}}}
        assert stream_response(event) == parsed(event), stamp


ODD_EVENTS = [
    {"status_update": {"task_id": "t"}},  # proto names, not JSON names
    {"statusUpdate": {"status": {"state": 3}}},  # an enum as its number
    {"statusUpdate": {"status": {"state": "NO_SUCH_STATE"}}},
    {"task": {"id": None, "contextId": "c"}},
    {"task": {"id": "t", "unknown": 1}},
    {"artifactUpdate": {"append": "true"}},
    {"message": {"parts": [{"text": "a", "url": "b"}]}},  # two members of a oneof
    {"task": {}, "message": {}},
    {"message": {"parts": [None]}},
    {"message": {"messageId": "a\ud800"}},
    {"artifactUpdate": {"artifact": {"parts": [{"raw": "not base64 !"}]}}},
    {"statusUpdate": {"status": {"timestamp": "yesterday"}}},
    [],
]


def same_outcome(event: Any) -> None:
    try:
        expected: Any = parsed(event)
    except Exception as exc:  # whichever ParseDict raises, ours must raise too
        with pytest.raises(type(exc)):
            stream_response(event)
        return
    assert stream_response(event) == expected


@pytest.mark.parametrize("event", ODD_EVENTS)
def test_an_event_outside_the_plans_gets_parsedicts_answer_or_error(event: Any) -> None:
    same_outcome(event)


MEMBERS = ["task", "message", "statusUpdate", "artifactUpdate", "id", "contextId", "taskId",
           "status", "state", "timestamp", "history", "artifacts", "artifact", "parts", "text",
           "url", "raw", "data", "metadata", "messageId", "role", "append", "lastChunk",
           "extensions", "referenceTaskIds", "artifactId", "name", "filename", "mediaType",
           "TASK_STATE_WORKING", "ROLE_AGENT"]  # fmt: skip
values = st.recursive(
    st.one_of(json_values, st.sampled_from(MEMBERS), st.sampled_from(["2026-11-27T17:00:00Z"])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(MEMBERS), inner, max_size=4)
    ),
    max_leaves=16,
)


@given(event=st.dictionaries(st.sampled_from(MEMBERS[:4]), values, min_size=1, max_size=2))
def test_any_json_gets_parsedicts_answer_or_error(event: dict[str, Any]) -> None:
    same_outcome(event)
