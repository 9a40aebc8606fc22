"""Wire shapes: stored rows -> A2A 1.0 protobuf messages, and those -> JSON of either version.

The 1.0 JSON form is the protobuf JSON mapping; the 0.3 form comes from the official SDK's
conversions, plus the `final` flag on the status update that ends a 0.3 stream.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from a2a.compat.v0_3 import conversions
from a2a.types import a2a_pb2 as pb
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.message import Message as ProtoMessage

from tasks import v03_json
from tasks.models import INTERRUPTED_STATES, TERMINAL_STATES, Artifact, Message, Task, TaskState

V03 = "0.3"
V1 = "1.0"
# The pre-0.2 methods of the first A2A guide (`tasks/send`...), served beside 0.3 without a
# version header; their JSON is `tasks.v01_json`'s.
V01 = "0.1"

STATE_TO_PB = {
    TaskState.SUBMITTED: pb.TASK_STATE_SUBMITTED,
    TaskState.WORKING: pb.TASK_STATE_WORKING,
    TaskState.INPUT_REQUIRED: pb.TASK_STATE_INPUT_REQUIRED,
    TaskState.AUTH_REQUIRED: pb.TASK_STATE_AUTH_REQUIRED,
    TaskState.COMPLETED: pb.TASK_STATE_COMPLETED,
    TaskState.CANCELED: pb.TASK_STATE_CANCELED,
    TaskState.FAILED: pb.TASK_STATE_FAILED,
    TaskState.REJECTED: pb.TASK_STATE_REJECTED,
}
PB_TO_STATE = {value: key for key, value in STATE_TO_PB.items()}
ROLE_TO_PB = {"user": pb.ROLE_USER, "agent": pb.ROLE_AGENT}
PB_TO_ROLE = {value: key for key, value in ROLE_TO_PB.items()}
ENDING_STATES = TERMINAL_STATES | INTERRUPTED_STATES


def to_json(message: ProtoMessage) -> dict[str, Any]:
    if type(message) is pb.Part and message.WhichOneof("content") == "text":
        return text_part_json(message)
    return restore_integers(MessageToDict(message))


def text_part_json(part: pb.Part) -> dict[str, Any]:
    """A text part's JSON, as MessageToDict writes it (members in field order), without its
    walk of the message in Python: a second on the event loop for a message of a thousand
    large parts."""
    shaped: dict[str, Any] = {"text": part.text}
    if part.HasField("metadata"):
        shaped["metadata"] = restore_integers(MessageToDict(part.metadata))
    if part.filename:
        shaped["filename"] = part.filename
    if part.media_type:
        shaped["mediaType"] = part.media_type
    return shaped


def restore_integers(value: Any) -> Any:
    """protobuf's Struct holds every number as a double; give whole numbers back as ints."""
    if isinstance(value, dict):
        return {key: restore_integers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [restore_integers(item) for item in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


# A stored part holding only these, all strings, is built directly: json_format's parse
# scans each string for lone surrogates with a regular expression, a second or so for a few
# megabytes of text, and stored strings were checked for them at the door already.
PLAIN_PART_FIELDS = {"text": "text", "mediaType": "media_type", "filename": "filename"}


def parts_to_pb(parts: Iterable[dict[str, Any]]) -> list[pb.Part]:
    return [part_to_pb(part) for part in parts]


def part_to_pb(part: dict[str, Any]) -> pb.Part:
    if part.keys() <= PLAIN_PART_FIELDS.keys() and all(type(v) is str for v in part.values()):
        return pb.Part(**{PLAIN_PART_FIELDS[key]: value for key, value in part.items()})
    return ParseDict(part, pb.Part())


def message_to_pb(row: Message) -> pb.Message:
    message = pb.Message(
        message_id=row.message_id,
        context_id=row.context_id,
        task_id=str(row.task_id) if row.task_id else "",
        role=ROLE_TO_PB[row.role],
        parts=parts_to_pb(row.parts),
        reference_task_ids=row.reference_task_ids,
        extensions=row.extensions,
    )
    if row.metadata:
        message.metadata.update(row.metadata)
    return message


def artifact_to_pb(row: Artifact) -> pb.Artifact:
    artifact = pb.Artifact(
        artifact_id=row.artifact_id,
        name=row.name,
        description=row.description,
        parts=parts_to_pb(row.parts),
        extensions=row.extensions,
    )
    if row.metadata:
        artifact.metadata.update(row.metadata)
    return artifact


def status_to_pb(task: Task) -> pb.TaskStatus:
    status = pb.TaskStatus(state=STATE_TO_PB[TaskState(task.state)])
    status.timestamp.FromDatetime(task.status_timestamp)
    if task.status_message:
        status.message.CopyFrom(ParseDict(task.status_message, pb.Message()))
    return status


def task_to_pb(
    task: Task,
    history: Iterable[Message] = (),
    artifacts: Iterable[Artifact] = (),
) -> pb.Task:
    result = pb.Task(id=str(task.id), context_id=task.context_id, status=status_to_pb(task))
    result.history.extend(message_to_pb(m) for m in history)
    result.artifacts.extend(artifact_to_pb(a) for a in artifacts)
    if task.metadata:
        result.metadata.update(task.metadata)
    return result


def dump_v03(model: Any) -> dict[str, Any]:
    return restore_integers(model.model_dump(mode="json", by_alias=True, exclude_none=True))


def task_json(task: pb.Task, version: str) -> dict[str, Any]:
    if version == V1:
        return to_json(task)
    return dump_v03(conversions.to_compat_task(task))


def send_result_json(result: pb.Task | pb.Message, version: str) -> dict[str, Any]:
    """1.0 wraps the result (`{"task": ...}`); 0.3 returns it bare with its `kind`."""
    if isinstance(result, pb.Task):
        body = task_json(result, version)
        return {"task": body} if version == V1 else body
    if version == V1:
        return {"message": to_json(result)}
    return dump_v03(conversions.to_compat_message(result))


def stream_event_json(event: dict[str, Any], version: str) -> dict[str, Any]:
    """A stored 1.0 StreamResponse payload in the asked version's shape."""
    if version == V1:
        return event
    fast = v03_json.event(event, final=event_ends_stream(event))
    return fast if fast is not None else stream_event_json_by_sdk(event)


def stream_event_json_by_sdk(event: dict[str, Any]) -> dict[str, Any]:
    response = ParseDict(event, pb.StreamResponse())
    which = response.WhichOneof("payload")
    if which == "task":
        return dump_v03(conversions.to_compat_task(response.task))
    if which == "message":
        return dump_v03(conversions.to_compat_message(response.message))
    if which == "artifact_update":
        return dump_v03(conversions.to_compat_task_artifact_update_event(response.artifact_update))
    body = dump_v03(conversions.to_compat_task_status_update_event(response.status_update))
    # A 0.3 stream also ends on an interrupted task, so its last event says so.
    body["final"] = PB_TO_STATE.get(response.status_update.status.state) in ENDING_STATES
    return body


def event_ends_stream(event: dict[str, Any]) -> bool:
    status = event.get("statusUpdate", {}).get("status", {})
    state = status.get("state")
    return state is not None and state_from_wire_name(state) in ENDING_STATES


def state_from_wire_name(name: str) -> TaskState | None:
    try:
        return PB_TO_STATE.get(pb.TaskState.Value(name))
    except ValueError:
        return None
