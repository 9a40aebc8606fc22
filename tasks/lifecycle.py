"""The only writer of task state.

Every change is a conditional UPDATE on the state the writer expects, the rows it adds
(messages, artifacts) and one numbered `TaskEvent` per change, in one transaction; the events
are published to the listeners after commit. Terminal tasks never change.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property, partial
from typing import Any

from a2a.types import a2a_pb2 as pb
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from google.protobuf.timestamp_pb2 import Timestamp

from a2ahub import asyncdb
from a2ahub.errors import invalid_params
from tasks import events, hooks, sql
from tasks.models import (
    OPEN_STATES,
    TERMINAL_STATES,
    Artifact,
    Message,
    Task,
    TaskEvent,
    TaskState,
)
from tasks.wire import (
    ENDING_STATES,
    PB_TO_ROLE,
    STATE_TO_PB,
    message_to_pb,
    status_to_pb,
    task_to_pb,
    to_json,
)

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
ARTIFACT_ALLOWED_FROM = frozenset({S.SUBMITTED, S.WORKING})


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


@dataclass
class Outcome:
    """What a write left behind: the state, and the snapshot when the task reached an end."""

    state: TaskState
    last_sequence: int
    snapshot: pb.Task | None = None
    known: Known | None = None


def check_transition(current: TaskState, change: Change) -> TaskState:
    if isinstance(change, ArtifactChange):
        if current not in ARTIFACT_ALLOWED_FROM:
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


class Writer:
    """Collects the rows and events of one transaction on one task."""

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
        if row is not None and change.append:
            row.parts = [*row.parts, *parts]
            row.updated_at = self.now
            if row not in self.artifacts and row not in self.updated_artifacts:
                self.updated_artifacts.append(row)
        elif row is not None:
            row.parts, row.name, row.updated_at = parts, artifact.name or row.name, self.now
            if row not in self.artifacts and row not in self.updated_artifacts:
                self.updated_artifacts.append(row)
        else:
            row = artifact_row(self.task, artifact, parts, len(existing), self.now)
            existing[artifact.artifact_id] = row
            self.artifacts.append(row)
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

    def save_rows(self) -> None:
        Message.objects.bulk_create(self.messages)
        Artifact.objects.bulk_create(self.artifacts)
        for row in self.updated_artifacts:
            # By its natural key: a row inserted by a one-statement write has no id here.
            Artifact.objects.filter(task_id=row.task_id, artifact_id=row.artifact_id).update(
                parts=row.parts, name=row.name, updated_at=row.updated_at
            )
        TaskEvent.objects.bulk_create(self.events)
        if self.task.push_enabled:
            # In the same transaction as the events: a delivery is never lost to a crash.
            hooks.run_events_written(self.task, self.events)


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


def open_task(
    spec: NewTask, changes: Sequence[Change] = (), runner: str = "", history: bool = True
) -> Outcome:
    """Store a new task with its first message and, in the same transaction, any changes the
    executor already made (a fast agent's whole life is one transaction). Without `history`
    the outcome knows no messages, and the turn's end carries no snapshot of the task (a
    stream, say, has no use for one)."""
    task, writer, end = plan_open(spec, changes, runner)
    with client_id_guard(spec):
        if spec.push_config is None and sql.can_insert_in_one_statement():
            sql.insert_all(new_rows(task, writer))
            after_commit(writer)
        else:
            with transaction.atomic():
                task.save(force_insert=True)
                if spec.push_config is not None:
                    hooks.run_config_given(task, spec.push_config)
                writer.save_rows()
                after_commit(writer)
    return opened(task, writer, end, history)


async def open_task_async(
    spec: NewTask, changes: Sequence[Change] = (), runner: str = "", history: bool = True
) -> Outcome:
    """`open_task` in one statement from the event loop (PostgreSQL). A push config given
    goes into the same statement, with a delivery of each event (`hooks.opening_parts`):
    when `opens_followed_in_one_statement`."""
    task, writer, end = plan_open(spec, changes, runner)
    if spec.push_config is None:
        statement, params = sql.insert_all_statement(new_rows(task, writer))
    else:
        assert opens_followed_in_one_statement()
        following, following_params = [], []
        for hook in hooks.opening_parts:
            part, part_params = hook(task, spec.push_config)
            following.append(part)
            following_params += part_params
        statement, params = sql.opening_statement(
            new_rows(task, writer), ", ".join(following), following_params
        )
    with client_id_guard(spec):
        await asyncdb.execute(statement, params)
    events.publish_soon(str(task.id), [(e.sequence, e.payload) for e in writer.events])
    if task.push_enabled:
        hooks.run_committed_soon(str(task.id))
    return opened(task, writer, end, history)


def opens_followed_in_one_statement() -> bool:
    """Whether `open_task_async` takes a new task with a push config (an app stores the
    config and its deliveries in the task's statement)."""
    return bool(hooks.opening_parts)


@contextmanager
def client_id_guard(spec: NewTask) -> Iterator[None]:
    """Two first sends naming the same new task (a pre-0.2 client's own id) at once: the
    unique constraint lets one task be made, and the other request is told why it was not."""
    try:
        yield
    except IntegrityError:
        if not spec.client_id:
            raise
        raise invalid_params(
            "id", "another request is creating a task with this id; send again once it answers"
        ) from None


def plan_open(
    spec: NewTask, changes: Sequence[Change], runner: str
) -> tuple[Task, Writer, TaskState]:
    now = timezone.now()
    end = final_state(S.SUBMITTED, changes)
    task = Task(
        id=spec.id, context_id=spec.context_id, agent_id=spec.agent_id, owner=spec.owner,
        client_id=spec.client_id, state=S.SUBMITTED, status_timestamp=now, metadata=spec.metadata,
        protocol_version=spec.protocol_version, binding=spec.binding,
        execution_mode=spec.execution_mode,
        runner=runner, heartbeat_at=now if runner else None, created_at=now, updated_at=now,
    )  # fmt: skip
    task.push_enabled = spec.push_config is not None
    writer = Writer(task, 0, now)
    first = stamp(spec.message, task, pb.ROLE_USER)
    writer.add_message(first, 0)
    opening = pb.Task(id=str(task.id), context_id=task.context_id, status=status_to_pb(task))
    opening.history.append(first)
    if task.metadata:
        opening.metadata.update(task.metadata)
    writer.add_event("task", {"task": to_json(opening)})
    # A new task's artifacts are all new rows: none is updated in place.
    apply_changes(writer, changes, {}, 1)
    task.last_sequence = writer.sequence
    return task, writer, end


def new_rows(task: Task, writer: Writer) -> list[Sequence[Any]]:
    return [[task], writer.messages, writer.artifacts, writer.events]


def opened(task: Task, writer: Writer, end: TaskState, history: bool) -> Outcome:
    snapshot = None
    if end in ENDING_STATES and history:
        snapshot = task_to_pb(task, writer.messages, writer.artifacts)
    known = Known(
        task.context_id, len(writer.messages), {a.artifact_id: a for a in writer.artifacts},
        push_enabled=task.push_enabled, metadata=task.metadata,
        history=[message_to_pb(m) for m in writer.messages] if history else None,
    )  # fmt: skip
    return Outcome(end, writer.sequence, snapshot, known)


async def record_async(
    task_id: uuid.UUID, expected: TaskState, changes: Sequence[Change], known: Known
) -> Outcome | None:
    """`record` in one statement from the event loop; None when the change needs `record`
    itself: webhooks, an artifact changed in place, not enough known of the task, or a task
    that moved on (which `record` then finds out and refuses)."""
    if known.push_enabled is not False or known.artifacts is None:
        return None
    if {c.artifact.artifact_id for c in changes if isinstance(c, ArtifactChange)} & set(
        known.artifacts
    ):
        return None
    end = final_state(expected, changes)
    now = timezone.now()
    shell = Task(id=task_id, context_id=known.context_id, state=expected)
    writer = Writer(shell, 0, now)
    artifacts = dict(known.artifacts)
    apply_changes(writer, changes, artifacts, known.position)
    rows = sql.RecordRows(writer.messages, writer.artifacts, writer.events)
    status = status_of(shell, changes)
    found = await asyncdb.execute(
        *sql.record_statement(task_id, expected, end, now, status, rows), fetch=True
    )
    if not found:
        return None
    number_events(writer, int(found[0][0]))
    known.artifacts = artifacts
    known.position += len(writer.messages)
    if known.history is not None:
        known.history.extend(message_to_pb(m) for m in writer.messages)
    events.publish_soon(str(task_id), [(e.sequence, e.payload) for e in writer.events])
    snapshot = snapshot_of(writer.task, known) if end in ENDING_STATES else None
    return Outcome(end, writer.sequence, snapshot)


def apply_changes(
    writer: Writer, changes: Sequence[Change], artifacts: dict[str, Artifact], position: int
) -> None:
    for change in changes:
        if isinstance(change, StatusChange):
            writer.status(change, position)
            position += 1 if change.message is not None else 0
        else:
            writer.artifact(change, artifacts)


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


def record(
    task_id: uuid.UUID, expected: TaskState, changes: Sequence[Change], known: Known | None = None
) -> Outcome:
    """Apply an executor's changes to a stored task that is still in the `expected` state:
    one conditional UPDATE (returning the new event count) and the new rows. On PostgreSQL,
    for a task without webhooks whose artifacts are only added to, that is one statement."""
    end = final_state(expected, changes)
    now = timezone.now()
    written = None
    if known is not None and fits_one_statement(task_id, known, changes):
        written = record_in_one_statement(task_id, expected, end, changes, known, now)
    writer, known = written or record_in_transaction(task_id, expected, end, changes, known, now)
    known.position += len(writer.messages)
    if known.history is not None:
        known.history.extend(message_to_pb(m) for m in writer.messages)
    snapshot = snapshot_of(writer.task, known) if end in ENDING_STATES else None
    return Outcome(end, writer.sequence, snapshot)


def fits_one_statement(task_id: uuid.UUID, known: Known, changes: Sequence[Change]) -> bool:
    if known.push_enabled or not sql.can_insert_in_one_statement():
        return False
    changed = {c.artifact.artifact_id for c in changes if isinstance(c, ArtifactChange)}
    if changed and known.artifacts is None:
        known.artifacts = read_artifacts(task_id)  # only its runner writes them: no race
    # An artifact changed in place is an UPDATE of its row: the transaction does that.
    return not changed & set(known.artifacts or ())


def record_in_one_statement(
    task_id: uuid.UUID,
    expected: TaskState,
    end: TaskState,
    changes: Sequence[Change],
    known: Known,
    now: datetime,
) -> tuple[Writer, Known] | None:
    """None when the task got a webhook meanwhile: its events need deliveries, in the same
    transaction."""
    shell = Task(id=task_id, context_id=known.context_id, state=expected)
    writer = Writer(shell, 0, now)
    artifacts = dict(known.artifacts or {})  # known changes only once the write is done
    apply_changes(writer, changes, artifacts, known.position)
    rows = sql.RecordRows(writer.messages, writer.artifacts, writer.events)
    status = status_of(shell, changes)
    row = sql.fetch_one(*sql.record_statement(task_id, expected, end, now, status, rows))
    if row is None:
        current = Task.objects.filter(id=task_id).values_list("state", "push_enabled").first()
        if current is not None and current == (expected, True):
            known.push_enabled = True
            return None
        raise TransitionRefused(current[0] if current else None, end)
    number_events(writer, int(row[0]))
    known.artifacts = artifacts
    after_commit(writer)
    return writer, known


def record_in_transaction(
    task_id: uuid.UUID,
    expected: TaskState,
    end: TaskState,
    changes: Sequence[Change],
    known: Known | None,
    now: datetime,
) -> tuple[Writer, Known]:
    with transaction.atomic():
        known = known or read_known(task_id)
        if known.artifacts is None and any(isinstance(c, ArtifactChange) for c in changes):
            known.artifacts = read_artifacts(task_id)
        shell = Task(id=task_id, context_id=known.context_id, state=expected)
        writer = Writer(shell, 0, now)
        artifacts = known.artifacts if known.artifacts is not None else {}
        apply_changes(writer, changes, artifacts, known.position)
        returned = sql.update_task(
            task_id, expected, end, len(writer.events), now, status_of(shell, changes)
        )
        if returned is None:
            current = Task.objects.filter(id=task_id).values_list("state", flat=True).first()
            raise TransitionRefused(current, end)
        last_sequence, shell.push_enabled = returned
        known.push_enabled = shell.push_enabled
        number_events(writer, last_sequence)
        writer.save_rows()
        after_commit(writer)
    return writer, known


def number_events(writer: Writer, last_sequence: int) -> None:
    """The batch's events take the numbers up to the task's new `last_sequence`."""
    for offset, event in enumerate(writer.events, start=last_sequence - len(writer.events) + 1):
        event.sequence = offset
    writer.sequence = last_sequence


def snapshot_of(task: Task, known: Known) -> pb.Task | None:
    if known.history is None or known.artifacts is None or known.metadata is None:
        return None
    task.metadata = known.metadata
    snapshot = task_to_pb(task, (), known.artifacts.values())
    snapshot.history.extend(known.history)
    return snapshot


def read_artifacts(task_id: uuid.UUID) -> dict[str, Artifact]:
    return {a.artifact_id: a for a in Artifact.objects.filter(task_id=task_id)}


def read_known(task_id: uuid.UUID) -> Known:
    context_id = Task.objects.filter(id=task_id).values_list("context_id", flat=True).first()
    if context_id is None:
        raise TransitionRefused(None, "a change")
    return Known(context_id, Message.objects.filter(task_id=task_id).count())


def status_of(task: Task, changes: Sequence[Change]) -> dict[str, Any] | None:
    if not any(isinstance(c, StatusChange) for c in changes):
        return None
    return {"status_message": task.status_message, "status_timestamp": task.status_timestamp}


def save_status(task: Task) -> None:
    Task.objects.filter(id=task.id).update(
        status_message=task.status_message, status_timestamp=task.status_timestamp
    )


def add_user_message(
    task_id: uuid.UUID,
    owner: str,
    message: pb.Message,
    push_config: pb.TaskPushNotificationConfig | None = None,
) -> Outcome:
    """A follow-up message resumes an interrupted task: it goes back to working. A push config
    sent with it is stored only if the task takes the message (and then hears its events)."""
    now = timezone.now()
    with transaction.atomic():
        updated = Task.objects.filter(
            id=task_id, owner=owner, state__in=[S.INPUT_REQUIRED, S.AUTH_REQUIRED]
        ).update(
            state=S.WORKING, last_sequence=F("last_sequence") + 1, updated_at=now, heartbeat_at=now
        )
        if not updated:
            current = Task.objects.filter(id=task_id).values_list("state", flat=True).first()
            raise TransitionRefused(current, S.WORKING)
        task = Task.objects.get(id=task_id)
        if push_config is not None:
            hooks.run_config_given(task, push_config)
        writer = Writer(task, task.last_sequence - 1, now)
        writer.add_message(stamp(message, task, pb.ROLE_USER), task.messages.count())
        writer.status(StatusChange(S.WORKING), 0)
        save_status(task)
        writer.save_rows()
        after_commit(writer)
    return Outcome(S.WORKING, writer.sequence)


def cancel(task_id: uuid.UUID, owner: str, reason: str = "") -> Outcome:
    """Cancel an open task; its runner, wherever it is, hears the event and stops."""
    now = timezone.now()
    with transaction.atomic():
        updated = Task.objects.filter(id=task_id, owner=owner, state__in=OPEN_STATES).update(
            state=S.CANCELED, last_sequence=F("last_sequence") + 1, updated_at=now
        )
        if not updated:
            current = Task.objects.filter(id=task_id).values_list("state", flat=True).first()
            raise TransitionRefused(current, S.CANCELED)
        task = Task.objects.get(id=task_id)
        writer = Writer(task, task.last_sequence - 1, now)
        message = agent_text(reason) if reason else None
        writer.status(StatusChange(S.CANCELED, message), task.messages.count())
        save_status(task)
        writer.save_rows()
        after_commit(writer)
    return Outcome(S.CANCELED, writer.sequence)


def fail_stale(task_id: uuid.UUID, reason: str) -> bool:
    """Fail an open task whose runner went silent; False when it finished meanwhile."""
    task = Task.objects.filter(id=task_id).values_list("state", flat=True).first()
    if task is None or task in TERMINAL_STATES:
        return False
    try:
        record(task_id, TaskState(task), [StatusChange(S.FAILED, agent_text(reason))])
    except TransitionRefused:
        return False
    Task.objects.filter(id=task_id).update(last_error=reason)
    return True


def heartbeat(task_id: uuid.UUID, runner: str) -> None:
    Task.objects.filter(id=task_id, state__in=OPEN_STATES).update(
        runner=runner, heartbeat_at=timezone.now()
    )


def agent_text(text: str) -> pb.Message:
    message = pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_AGENT)
    message.parts.add(text=text)
    return message


def after_commit(writer: Writer) -> None:
    published = [(e.sequence, e.payload) for e in writer.events]
    publish: Callable[[], None] = partial(events.publish, str(writer.task.id), published)
    transaction.on_commit(publish)
    if writer.task.push_enabled:
        transaction.on_commit(partial(hooks.run_committed, str(writer.task.id)))
