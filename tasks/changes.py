"""What a change to a task writes, planned without the database: the transitions allowed,
the rows (messages, artifacts) and the numbered events a batch of changes makes, and what the
writer knows of a stored task. `tasks.writer` applies a plan through the store."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from a2a.types import a2a_pb2 as pb
from django.utils import timezone
from google.protobuf.timestamp_pb2 import Timestamp

from a2ahub import big_bodies
from tasks.models import ACTIVE_STATES, OPEN_STATES, Artifact, Message, Task, TaskEvent, TaskState
from tasks.wire import PB_TO_ROLE, STATE_TO_PB, task_to_pb, to_json

S = TaskState


# For each target state, the states a task may be in to move there.
ALLOWED_FROM: dict[TaskState, frozenset[TaskState]] = {
    S.WORKING: frozenset({S.SUBMITTED, S.WORKING, S.INPUT_REQUIRED, S.AUTH_REQUIRED}),
    S.INPUT_REQUIRED: frozenset({S.SUBMITTED, S.WORKING}),
    S.AUTH_REQUIRED: frozenset({S.SUBMITTED, S.WORKING}),
    S.COMPLETED: frozenset({S.SUBMITTED, S.WORKING}),
    S.REJECTED: frozenset({S.SUBMITTED, S.WORKING}),
    S.FAILED: frozenset(OPEN_STATES),
    S.CANCELED: frozenset(OPEN_STATES),
}


class TransitionRefused(Exception):
    """The change is not allowed from the task's state (or the task moved on meanwhile)."""

    def __init__(self, current: str | None, wanted: str) -> None:
        super().__init__(f"cannot go from {current} to {wanted}")
        self.current = current


@dataclass
class StatusChange:
    state: TaskState
    message: pb.Message | None = None


@dataclass
class ArtifactChange:
    artifact: pb.Artifact
    append: bool = False
    last_chunk: bool = False


Change = StatusChange | ArtifactChange


def carried_bytes(changes: Sequence[Change]) -> int:
    """About the bytes of what `changes` carry, enough to tell a big body (`a2ahub.big_bodies`)."""
    return big_bodies.size_of_all(
        change.artifact if isinstance(change, ArtifactChange) else change.message
        for change in changes
        if isinstance(change, ArtifactChange) or change.message is not None
    )


@dataclass
class NewTask:
    agent_id: int
    owner: str
    context_id: str
    message: pb.Message
    protocol_version: str
    execution_mode: str
    metadata: dict[str, Any] = field(default_factory=dict)
    id: uuid.UUID = field(default_factory=uuid.uuid4)
    # A webhook given with the first message; it hears every event from the first one.
    push_config: pb.TaskPushNotificationConfig | None = None
    # The id a pre-0.2 client chose for the task (`Task.client_id`); "" for the others.
    client_id: str = ""
    binding: str = "JSONRPC"  # a `Binding`
    traceparent: str = ""  # the creating call's trace context (`a2ahub.tracing`)


@dataclass
class Outcome:
    """What a write left behind: the state, and the snapshot when the task reached an end."""

    state: TaskState
    last_sequence: int
    snapshot: pb.Task | None = None
    known: Known | None = None


def check_transition(current: TaskState, change: Change) -> TaskState:
    if isinstance(change, ArtifactChange):
        if current not in ACTIVE_STATES:  # an artifact comes while the task is worked on
            raise TransitionRefused(current, "artifact")
        return current
    if current not in ALLOWED_FROM[change.state]:
        raise TransitionRefused(current, change.state)
    return change.state


def final_state(start: TaskState, changes: Sequence[Change]) -> TaskState:
    state = start
    for change in changes:
        state = check_transition(state, change)
    return state


class Plan:
    """The rows and events one batch of changes makes on one task: what a store writes, in
    one transaction."""

    def __init__(self, task: Task, sequence: int, now: datetime) -> None:
        self.task = task
        self.sequence = sequence
        self.now = now
        self.events: list[TaskEvent] = []
        self.messages: list[Message] = []
        self.artifacts: list[Artifact] = []
        self.updated_artifacts: list[Artifact] = []

    def add_event(self, kind: str, payload: dict[str, Any]) -> None:
        self.sequence += 1
        self.events.append(
            TaskEvent(
                task=self.task,
                sequence=self.sequence,
                kind=kind,
                payload=payload,
                created_at=self.now,
            )
        )

    def add_message(self, message: pb.Message, position: int) -> Message:
        row = Message(
            task=self.task,
            context_id=self.task.context_id,
            message_id=message.message_id or uuid.uuid4().hex,
            role=PB_TO_ROLE.get(message.role, "agent"),
            parts=[to_json(p) for p in message.parts],
            reference_task_ids=list(message.reference_task_ids),
            extensions=list(message.extensions),
            metadata=to_json(message.metadata) if message.HasField("metadata") else {},
            position=position,
            created_at=self.now,
        )
        self.messages.append(row)
        return row

    def status(self, change: StatusChange, position: int) -> None:
        self.task.state = change.state
        self.task.status_timestamp = self.now
        self.task.status_message = None
        status: dict[str, Any] = {"state": pb.TaskState.Name(STATE_TO_PB[change.state])}
        if change.message is not None:
            message = stamp(change.message, self.task, pb.ROLE_AGENT)
            self.add_message(message, position)
            self.task.status_message = status["message"] = to_json(message)
        status["timestamp"] = self.timestamp
        update = {"taskId": str(self.task.id), "contextId": self.task.context_id, "status": status}
        self.add_event("status", {"statusUpdate": update})

    @cached_property
    def timestamp(self) -> str:
        """`now` as the protobuf JSON of a Timestamp, for every status of the batch."""
        stamp = Timestamp()
        stamp.FromDatetime(self.now)
        return stamp.ToJsonString()

    def artifact(self, change: ArtifactChange, existing: dict[str, Artifact]) -> None:
        artifact = change.artifact
        if not artifact.artifact_id:
            artifact.artifact_id = uuid.uuid4().hex
        parts = [to_json(p) for p in artifact.parts]
        row = existing.get(artifact.artifact_id)
        if row is None:
            row = artifact_row(self.task, artifact, parts, len(existing), self.now)
            existing[artifact.artifact_id] = row
            self.artifacts.append(row)
        else:
            if change.append:
                row.parts = [*row.parts, *parts]
            else:
                row.parts, row.name = parts, artifact.name or row.name
            row.updated_at = self.now
            if row not in self.artifacts and row not in self.updated_artifacts:
                self.updated_artifacts.append(row)
        update: dict[str, Any] = {
            "taskId": str(self.task.id),
            "contextId": self.task.context_id,
            "artifact": artifact_json(artifact, parts),
        }
        if change.append:
            update["append"] = True
        if change.last_chunk:
            update["lastChunk"] = True
        self.add_event("artifact", {"artifactUpdate": update})


def artifact_json(artifact: pb.Artifact, parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The protobuf JSON of the artifact, given its parts' (events are written in bulk; the
    generic mapping was a tenth of a streamed turn's CPU)."""
    result: dict[str, Any] = {"artifactId": artifact.artifact_id}
    if artifact.name:
        result["name"] = artifact.name
    if artifact.description:
        result["description"] = artifact.description
    if parts:
        result["parts"] = parts
    if artifact.HasField("metadata"):
        result["metadata"] = to_json(artifact.metadata)
    if artifact.extensions:
        result["extensions"] = list(artifact.extensions)
    return result


def artifact_row(
    task: Task, artifact: pb.Artifact, parts: list[dict[str, Any]], position: int, now: datetime
) -> Artifact:
    return Artifact(
        task=task,
        artifact_id=artifact.artifact_id,
        name=artifact.name,
        description=artifact.description,
        parts=parts,
        extensions=list(artifact.extensions),
        metadata=to_json(artifact.metadata) if artifact.HasField("metadata") else {},
        position=position,
        created_at=now,
        updated_at=now,
    )


def stamp(message: pb.Message, task: Task, role: int) -> pb.Message:
    stamped = pb.Message()
    stamped.CopyFrom(message)
    stamped.task_id = str(task.id)
    stamped.context_id = task.context_id
    if not stamped.role:
        stamped.role = role  # type: ignore[assignment]
    if not stamped.message_id:
        stamped.message_id = uuid.uuid4().hex
    return stamped


def plan_open(
    spec: NewTask, changes: Sequence[Change], runner: str
) -> tuple[Task, Plan, TaskState]:
    now = timezone.now()
    end = final_state(S.SUBMITTED, changes)
    task = Task(
        id=spec.id, context_id=spec.context_id, agent_id=spec.agent_id, owner=spec.owner,
        client_id=spec.client_id, state=S.SUBMITTED, status_timestamp=now, metadata=spec.metadata,
        protocol_version=spec.protocol_version, binding=spec.binding,
        execution_mode=spec.execution_mode, traceparent=spec.traceparent,
        runner=runner, heartbeat_at=now if runner else None, created_at=now, updated_at=now,
    )  # fmt: skip
    task.push_enabled = spec.push_config is not None
    plan = Plan(task, 0, now)
    first = stamp(spec.message, task, pb.ROLE_USER)
    plan.add_message(first, 0)
    opening = task_to_pb(task)
    opening.history.append(first)
    plan.add_event("task", {"task": to_json(opening)})
    # A new task's artifacts are all new rows: none is updated in place.
    apply_changes(plan, changes, {}, 1)
    task.last_sequence = plan.sequence
    return task, plan, end


def apply_changes(
    plan: Plan, changes: Sequence[Change], artifacts: dict[str, Artifact], position: int
) -> None:
    for change in changes:
        if isinstance(change, StatusChange):
            plan.status(change, position)
            position += 1 if change.message is not None else 0
        else:
            plan.artifact(change, artifacts)


@dataclass
class Known:
    """What a runner already knows of its stored task, so a write need not read it first."""

    context_id: str
    position: int  # how many messages the task has
    artifacts: dict[str, Artifact] | None = None  # None: not known, read them when needed
    push_enabled: bool | None = None  # None: not known
    # With these too, the write that ends a turn returns the whole task (`Outcome.snapshot`).
    metadata: dict[str, Any] | None = None
    history: list[pb.Message] | None = None  # every message of the task, in order


def number_events(plan: Plan, last_sequence: int) -> None:
    """The batch's events take the numbers up to the task's new `last_sequence`."""
    for offset, event in enumerate(plan.events, start=last_sequence - len(plan.events) + 1):
        event.sequence = offset
    plan.sequence = last_sequence


def snapshot_of(task: Task, known: Known) -> pb.Task | None:
    if known.history is None or known.artifacts is None or known.metadata is None:
        return None
    task.metadata = known.metadata
    snapshot = task_to_pb(task, (), known.artifacts.values())
    snapshot.history.extend(known.history)
    return snapshot


def agent_text(text: str) -> pb.Message:
    message = pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_AGENT)
    message.parts.add(text=text)
    return message
