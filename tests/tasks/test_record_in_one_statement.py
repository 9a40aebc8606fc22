"""Changes to a stored task written as one statement (PostgreSQL, a task without webhooks).

The conditional UPDATE and every row it allows go together: a task that moved on gets
nothing, events are numbered after the stored ones, and the write that ends a turn returns
the task as stored. Outside a test transaction, since the one-statement write is for
autocommit only.
"""

from __future__ import annotations

import uuid

import pytest
from a2a.types import a2a_pb2 as pb
from asgiref.sync import async_to_sync

from agents.models import Agent
from tasks import writer
from tasks.changes import ArtifactChange, Known, NewTask, StatusChange, TransitionRefused
from tasks.models import Artifact, Message, Task, TaskEvent, TaskState
from tasks.reading import load_task
from tests.factories.agents import make_agent
from tests.factories.messages import user_message
from tests.factories.versions import V1
from tests.helpers import postgresql_only

S = TaskState
OWNER = "apikey:record"

pytestmark = [
    pytest.mark.django_db(transaction=True),
    postgresql_only("the one-statement write is PostgreSQL's"),
]


@pytest.fixture
def agent(db: None) -> Agent:
    return make_agent("recorder")


def chunk(text: str, append: bool = False) -> ArtifactChange:
    artifact = pb.Artifact(artifact_id="answer", name="answer")
    artifact.parts.add(text=text)
    return ArtifactChange(artifact, append=append)


def stored_task(agent: Agent) -> tuple[uuid.UUID, Known]:
    """A new task, and what its runner knows of it (all of it, as a worker's claim does)."""
    spec = NewTask(agent_id=agent.pk, owner=OWNER, context_id="ctx",
                   message=user_message("hello"), protocol_version=V1,
                   execution_mode="worker", metadata={"n": 1})  # fmt: skip
    async_to_sync(writer.open)(spec)
    history = [load_task(Task.objects.get(id=spec.id), None).history[0]]
    return spec.id, Known("ctx", 1, {}, False, {"n": 1}, history)


def test_it_writes_a_turn_with_its_events_numbered_after_the_stored_ones(agent: Agent) -> None:
    task_id, known = stored_task(agent)

    outcome = async_to_sync(writer.record)(
        task_id, S.SUBMITTED, [StatusChange(S.WORKING), chunk("hi"), StatusChange(S.COMPLETED)],
        known,
    )  # fmt: skip

    assert outcome.state == S.COMPLETED
    assert outcome.last_sequence == 4
    events = TaskEvent.objects.filter(task_id=task_id)
    assert [(e.sequence, e.kind) for e in events] == [
        (1, "task"), (2, "status"), (3, "artifact"), (4, "status"),
    ]  # fmt: skip
    assert Task.objects.get(id=task_id).state == S.COMPLETED
    assert [a.parts for a in Artifact.objects.filter(task_id=task_id)] == [[{"text": "hi"}]]


def test_the_write_that_ends_a_turn_returns_the_task_as_stored(agent: Agent) -> None:
    task_id, known = stored_task(agent)
    async_to_sync(writer.record)(
        task_id, S.SUBMITTED, [StatusChange(S.WORKING), chunk("one ")], known
    )

    outcome = async_to_sync(writer.record)(
        task_id, S.WORKING, [chunk("two", append=True), StatusChange(S.COMPLETED)], known
    )

    assert outcome.snapshot == load_task(Task.objects.get(id=task_id), None)
    assert [p.text for p in outcome.snapshot.artifacts[0].parts] == ["one ", "two"]
    assert outcome.snapshot.metadata["n"] == 1


def test_it_refuses_a_change_on_a_task_that_moved_on_and_writes_nothing(agent: Agent) -> None:
    task_id, known = stored_task(agent)
    async_to_sync(writer.cancel)(task_id, OWNER)

    with pytest.raises(TransitionRefused) as refused:
        async_to_sync(writer.record)(
            task_id, S.SUBMITTED, [chunk("late"), StatusChange(S.COMPLETED)], known
        )

    assert refused.value.current == S.CANCELED
    assert Task.objects.get(id=task_id).state == S.CANCELED
    assert not Artifact.objects.filter(task_id=task_id).exists()
    assert list(TaskEvent.objects.filter(task_id=task_id).values_list("kind", flat=True)) == [
        "task", "status",
    ]  # fmt: skip


def test_a_status_message_is_stored_in_the_history_and_the_snapshot(agent: Agent) -> None:
    task_id, known = stored_task(agent)
    question = pb.Message(message_id="q-1", role=pb.ROLE_AGENT)
    question.parts.add(text="Which one?")

    asked = [StatusChange(S.INPUT_REQUIRED, question)]
    outcome = async_to_sync(writer.record)(task_id, S.SUBMITTED, asked, known)

    assert [m.message_id for m in Message.objects.filter(task_id=task_id)][1:] == ["q-1"]
    assert outcome.snapshot is not None
    assert [m.message_id for m in outcome.snapshot.history][1:] == ["q-1"]
    assert outcome.snapshot.status.message.message_id == "q-1"
    assert known.position == 2
