"""The only writer of task state.

Every change is a conditional UPDATE on the state the writer expects, the rows it adds
(messages, artifacts) and one numbered `TaskEvent` per change, in one transaction; the events
are published to the listeners after commit. Terminal tasks never change.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import partial

from a2a.types import a2a_pb2 as pb
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from a2ahub import asyncdb
from a2ahub.errors import invalid_params
from tasks import events, hooks, sql
from tasks.changes import (
    ArtifactChange,
    Change,
    Known,
    NewTask,
    Outcome,
    Plan,
    S,
    StatusChange,
    TransitionRefused,
    agent_text,
    apply_changes,
    final_state,
    new_rows,
    number_events,
    plan_open,
    snapshot_of,
    stamp,
    status_of,
)
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
    message_to_pb,
    task_to_pb,
)


def open_task(
    spec: NewTask, changes: Sequence[Change] = (), runner: str = "", history: bool = True
) -> Outcome:
    """Store a new task with its first message and, in the same transaction, any changes the
    executor already made (a fast agent's whole life is one transaction). Without `history`
    the outcome knows no messages, and the turn's end carries no snapshot of the task (a
    stream, say, has no use for one)."""
    task, plan, end = plan_open(spec, changes, runner)
    with client_id_guard(spec):
        if spec.push_config is None and sql.can_insert_in_one_statement():
            sql.insert_all(new_rows(task, plan))
            after_commit(plan)
        else:
            with transaction.atomic():
                task.save(force_insert=True)
                if spec.push_config is not None:
                    hooks.run_config_given(task, spec.push_config)
                save_rows(plan)
                after_commit(plan)
    return opened(task, plan, end, history)


async def open_task_async(
    spec: NewTask, changes: Sequence[Change] = (), runner: str = "", history: bool = True
) -> Outcome:
    """`open_task` in one statement from the event loop (PostgreSQL). A push config given
    goes into the same statement, with a delivery of each event (`hooks.opening_parts`):
    when `opens_followed_in_one_statement`."""
    task, plan, end = plan_open(spec, changes, runner)
    if spec.push_config is None:
        statement, params = sql.insert_all_statement(new_rows(task, plan))
    else:
        assert opens_followed_in_one_statement()
        following, following_params = [], []
        for hook in hooks.opening_parts:
            part, part_params = hook(task, spec.push_config)
            following.append(part)
            following_params += part_params
        statement, params = sql.opening_statement(
            new_rows(task, plan), ", ".join(following), following_params
        )
    with client_id_guard(spec):
        await asyncdb.execute(statement, params)
    events.publish_soon(str(task.id), [(e.sequence, e.payload) for e in plan.events])
    if task.push_enabled:
        hooks.run_committed_soon(str(task.id))
    return opened(task, plan, end, history)


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


def opened(task: Task, plan: Plan, end: TaskState, history: bool) -> Outcome:
    snapshot = None
    if end in ENDING_STATES and history:
        snapshot = task_to_pb(task, plan.messages, plan.artifacts)
    known = Known(
        task.context_id, len(plan.messages), {a.artifact_id: a for a in plan.artifacts},
        push_enabled=task.push_enabled, metadata=task.metadata,
        history=[message_to_pb(m) for m in plan.messages] if history else None,
    )  # fmt: skip
    return Outcome(end, plan.sequence, snapshot, known)


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
    plan = Plan(shell, 0, now)
    artifacts = dict(known.artifacts)
    apply_changes(plan, changes, artifacts, known.position)
    rows = sql.RecordRows(plan.messages, plan.artifacts, plan.events)
    status = status_of(shell, changes)
    found = await asyncdb.execute(
        *sql.record_statement(task_id, expected, end, now, status, rows), fetch=True
    )
    if not found:
        return None
    number_events(plan, int(found[0][0]))
    known.artifacts = artifacts
    known.position += len(plan.messages)
    if known.history is not None:
        known.history.extend(message_to_pb(m) for m in plan.messages)
    events.publish_soon(str(task_id), [(e.sequence, e.payload) for e in plan.events])
    snapshot = snapshot_of(plan.task, known) if end in ENDING_STATES else None
    return Outcome(end, plan.sequence, snapshot)


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
    plan, known = written or record_in_transaction(task_id, expected, end, changes, known, now)
    known.position += len(plan.messages)
    if known.history is not None:
        known.history.extend(message_to_pb(m) for m in plan.messages)
    snapshot = snapshot_of(plan.task, known) if end in ENDING_STATES else None
    return Outcome(end, plan.sequence, snapshot)


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
) -> tuple[Plan, Known] | None:
    """None when the task got a webhook meanwhile: its events need deliveries, in the same
    transaction."""
    shell = Task(id=task_id, context_id=known.context_id, state=expected)
    plan = Plan(shell, 0, now)
    artifacts = dict(known.artifacts or {})  # known changes only once the write is done
    apply_changes(plan, changes, artifacts, known.position)
    rows = sql.RecordRows(plan.messages, plan.artifacts, plan.events)
    status = status_of(shell, changes)
    row = sql.fetch_one(*sql.record_statement(task_id, expected, end, now, status, rows))
    if row is None:
        current = Task.objects.filter(id=task_id).values_list("state", "push_enabled").first()
        if current is not None and current == (expected, True):
            known.push_enabled = True
            return None
        raise TransitionRefused(current[0] if current else None, end)
    number_events(plan, int(row[0]))
    known.artifacts = artifacts
    after_commit(plan)
    return plan, known


def record_in_transaction(
    task_id: uuid.UUID,
    expected: TaskState,
    end: TaskState,
    changes: Sequence[Change],
    known: Known | None,
    now: datetime,
) -> tuple[Plan, Known]:
    with transaction.atomic():
        known = known or read_known(task_id)
        if known.artifacts is None and any(isinstance(c, ArtifactChange) for c in changes):
            known.artifacts = read_artifacts(task_id)
        shell = Task(id=task_id, context_id=known.context_id, state=expected)
        plan = Plan(shell, 0, now)
        artifacts = known.artifacts if known.artifacts is not None else {}
        apply_changes(plan, changes, artifacts, known.position)
        returned = sql.update_task(
            task_id, expected, end, len(plan.events), now, status_of(shell, changes)
        )
        if returned is None:
            current = Task.objects.filter(id=task_id).values_list("state", flat=True).first()
            raise TransitionRefused(current, end)
        last_sequence, shell.push_enabled = returned
        known.push_enabled = shell.push_enabled
        number_events(plan, last_sequence)
        save_rows(plan)
        after_commit(plan)
    return plan, known


def read_artifacts(task_id: uuid.UUID) -> dict[str, Artifact]:
    return {a.artifact_id: a for a in Artifact.objects.filter(task_id=task_id)}


def read_known(task_id: uuid.UUID) -> Known:
    context_id = Task.objects.filter(id=task_id).values_list("context_id", flat=True).first()
    if context_id is None:
        raise TransitionRefused(None, "a change")
    return Known(context_id, Message.objects.filter(task_id=task_id).count())


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
        plan = Plan(task, task.last_sequence - 1, now)
        plan.add_message(stamp(message, task, pb.ROLE_USER), task.messages.count())
        plan.status(StatusChange(S.WORKING), 0)
        save_status(task)
        save_rows(plan)
        after_commit(plan)
    return Outcome(S.WORKING, plan.sequence)


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
        plan = Plan(task, task.last_sequence - 1, now)
        message = agent_text(reason) if reason else None
        plan.status(StatusChange(S.CANCELED, message), task.messages.count())
        save_status(task)
        save_rows(plan)
        after_commit(plan)
    return Outcome(S.CANCELED, plan.sequence)


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


def after_commit(plan: Plan) -> None:
    published = [(e.sequence, e.payload) for e in plan.events]
    publish: Callable[[], None] = partial(events.publish, str(plan.task.id), published)
    transaction.on_commit(publish)
    if plan.task.push_enabled:
        transaction.on_commit(partial(hooks.run_committed, str(plan.task.id)))


def save_rows(plan: Plan) -> None:
    Message.objects.bulk_create(plan.messages)
    Artifact.objects.bulk_create(plan.artifacts)
    for row in plan.updated_artifacts:
        # By its natural key: a row inserted by a one-statement write has no id here.
        Artifact.objects.filter(task_id=row.task_id, artifact_id=row.artifact_id).update(
            parts=row.parts, name=row.name, updated_at=row.updated_at
        )
    TaskEvent.objects.bulk_create(plan.events)
    if plan.task.push_enabled:
        # In the same transaction as the events: a delivery is never lost to a crash.
        hooks.run_events_written(plan.task, plan.events)
