"""The task lifecycle: which state changes are allowed, that terminal tasks never change, and
that every change writes one numbered TaskEvent (1..n per task, no gaps)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pytest
from a2a.types import a2a_pb2 as pb
from asgiref.sync import async_to_sync

from agents.models import Agent
from tasks import writer
from tasks.changes import ArtifactChange, Change, NewTask, StatusChange, TransitionRefused
from tasks.models import Task, TaskEvent, TaskState
from tests.factories.messages import user_message
from tests.factories.versions import V03, V1, VERSIONS
from tests.protocol.answers import state_of
from tests.protocol.callers import Caller

pytestmark = pytest.mark.django_db

S = TaskState
OWNER = "apikey:lifecycle"
# The contract, written out here rather than read from the code: submitted and working may
# go anywhere; an interrupted task resumes (working) or ends by failure or cancel; terminal
# tasks go nowhere.
ALLOWED: dict[TaskState, set[TaskState]] = {
    S.SUBMITTED: {S.WORKING, S.INPUT_REQUIRED, S.AUTH_REQUIRED, S.COMPLETED, S.REJECTED,
                  S.FAILED, S.CANCELED},
    S.WORKING: {S.WORKING, S.INPUT_REQUIRED, S.AUTH_REQUIRED, S.COMPLETED, S.REJECTED,
                S.FAILED, S.CANCELED},
    S.INPUT_REQUIRED: {S.WORKING, S.FAILED, S.CANCELED},
    S.AUTH_REQUIRED: {S.WORKING, S.FAILED, S.CANCELED},
    S.COMPLETED: set(),
    S.CANCELED: set(),
    S.FAILED: set(),
    S.REJECTED: set(),
}  # fmt: skip
TARGETS = [s for s in S if s != S.SUBMITTED]
PAIRS = [(start, target) for start in S for target in TARGETS]


def artifact(text: str, artifact_id: str = "a-1") -> pb.Artifact:
    result = pb.Artifact(artifact_id=artifact_id, name="out")
    result.parts.add(text=text)
    return result


def new_task(agent: Agent, changes: Sequence[Change] = ()) -> uuid.UUID:
    spec = NewTask(agent_id=agent.pk, owner=OWNER, context_id="ctx", message=user_message(),
                   protocol_version=V1, execution_mode="inline")  # fmt: skip
    async_to_sync(writer.open)(spec, changes)
    return spec.id


def task_in(agent: Agent, state: TaskState) -> uuid.UUID:
    """A stored task that reached `state` through allowed changes."""
    if state == S.SUBMITTED:
        return new_task(agent)
    if state == S.CANCELED:
        task_id = new_task(agent)
        async_to_sync(writer.cancel)(task_id, OWNER)
        return task_id
    return new_task(agent, [StatusChange(state)])


def sequences(task_id: uuid.UUID) -> list[int]:
    return list(TaskEvent.objects.filter(task_id=task_id).values_list("sequence", flat=True))


def state(task_id: uuid.UUID) -> str:
    return Task.objects.get(id=task_id).state


@pytest.mark.parametrize(("start", "target"), PAIRS, ids=[f"{a}->{b}" for a, b in PAIRS])
def test_it_allows_exactly_the_transitions_of_the_contract(
    echo: Agent, start: TaskState, target: TaskState
) -> None:
    task_id = task_in(echo, start)
    before = sequences(task_id)

    try:
        outcome = async_to_sync(writer.record)(task_id, start, [StatusChange(target)])
    except TransitionRefused as refused:
        assert target not in ALLOWED[start]
        assert refused.current == start
        assert state(task_id) == start
        assert sequences(task_id) == before
    else:
        assert target in ALLOWED[start]
        assert outcome.state == target
        assert state(task_id) == target
        assert sequences(task_id) == [*before, len(before) + 1]


@pytest.mark.parametrize("start", [S.SUBMITTED, S.WORKING, S.INPUT_REQUIRED, S.AUTH_REQUIRED])
def test_it_cancels_every_open_task(echo: Agent, start: TaskState) -> None:
    task_id = task_in(echo, start)

    async_to_sync(writer.cancel)(task_id, OWNER)

    assert state(task_id) == S.CANCELED
    event = TaskEvent.objects.filter(task_id=task_id).last()
    assert event is not None
    assert event.payload["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"


@pytest.mark.parametrize("end", [S.COMPLETED, S.CANCELED, S.FAILED, S.REJECTED])
def test_it_never_changes_a_terminal_task(echo: Agent, end: TaskState) -> None:
    task_id = task_in(echo, end)
    before = sequences(task_id)
    attempts = [
        lambda: async_to_sync(writer.cancel)(task_id, OWNER),
        lambda: async_to_sync(writer.add_user_message)(task_id, OWNER, user_message("again")),
        lambda: async_to_sync(writer.record)(task_id, end, [ArtifactChange(artifact("late"))]),
        lambda: async_to_sync(writer.record)(task_id, S.WORKING, [StatusChange(S.COMPLETED)]),
    ]

    for attempt in attempts:
        with pytest.raises(TransitionRefused):
            attempt()

    assert state(task_id) == end
    assert sequences(task_id) == before
    assert not Task.objects.get(id=task_id).artifacts.exists()
    assert Task.objects.get(id=task_id).messages.count() == 1


def test_it_refuses_a_change_when_the_task_moved_on_meanwhile(echo: Agent) -> None:
    task_id = task_in(echo, S.WORKING)
    async_to_sync(writer.cancel)(task_id, OWNER)

    with pytest.raises(TransitionRefused) as refused:
        async_to_sync(writer.record)(task_id, S.WORKING, [StatusChange(S.COMPLETED)])

    assert refused.value.current == S.CANCELED
    assert state(task_id) == S.CANCELED


def test_it_refuses_artifacts_on_an_interrupted_task(echo: Agent) -> None:
    task_id = task_in(echo, S.INPUT_REQUIRED)

    with pytest.raises(TransitionRefused):
        async_to_sync(writer.record)(task_id, S.INPUT_REQUIRED, [ArtifactChange(artifact("x"))])


def test_it_resumes_an_interrupted_task_with_a_user_message(echo: Agent) -> None:
    task_id = task_in(echo, S.INPUT_REQUIRED)

    async_to_sync(writer.add_user_message)(task_id, OWNER, user_message("more"))

    assert state(task_id) == S.WORKING
    assert Task.objects.get(id=task_id).messages.count() == 2
    assert sequences(task_id) == [1, 2, 3]


def test_it_refuses_a_user_message_for_someone_elses_task(echo: Agent) -> None:
    task_id = task_in(echo, S.INPUT_REQUIRED)

    with pytest.raises(TransitionRefused):
        async_to_sync(writer.add_user_message)(task_id, "apikey:someone-else", user_message())

    assert state(task_id) == S.INPUT_REQUIRED


def test_it_writes_one_event_per_change_numbered_without_gaps(echo: Agent) -> None:
    task_id = new_task(echo, [StatusChange(S.WORKING)])
    async_to_sync(writer.record)(
        task_id, S.WORKING, [ArtifactChange(artifact("one "), last_chunk=False)]
    )
    async_to_sync(writer.record)(
        task_id, S.WORKING,
        [ArtifactChange(artifact("two"), append=True, last_chunk=True), StatusChange(S.WORKING),
         StatusChange(S.COMPLETED)],
    )  # fmt: skip

    events = list(TaskEvent.objects.filter(task_id=task_id))
    kinds = [e.kind for e in events]
    assert [e.sequence for e in events] == [1, 2, 3, 4, 5, 6]
    assert kinds == ["task", "status", "artifact", "artifact", "status", "status"]
    assert Task.objects.get(id=task_id).last_sequence == 6
    stored = Task.objects.get(id=task_id).artifacts.get()
    assert [p["text"] for p in stored.parts] == ["one ", "two"]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_task_served_over_the_wire_has_events_numbered_from_one(
    caller: Caller, echo: Agent, version: str
) -> None:
    task = caller.send("echo", version)

    events = list(TaskEvent.objects.filter(task_id=task["id"]))
    assert [e.sequence for e in events] == [1, 2, 3, 4]
    assert [e.kind for e in events] == ["task", "status", "artifact", "status"]
    assert events[-1].payload["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_a_refused_follow_up_writes_no_event(caller: Caller, echo: Agent) -> None:
    task = caller.send("echo", V03)
    before = list(TaskEvent.objects.filter(task_id=task["id"]).values_list("sequence", flat=True))

    caller.error("echo", V03, "send", message={"taskId": task["id"]})

    after = list(TaskEvent.objects.filter(task_id=task["id"]).values_list("sequence", flat=True))
    assert after == before
    assert state_of(caller.get("echo", V03, task["id"])) == "completed"
