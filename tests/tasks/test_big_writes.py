"""A task write that carries a big message or artifact (past A2A_THREAD_BODY_BYTES) is turned
into rows, and the outcome read back from them, on a thread: the event loop serves other
requests meanwhile. A small one stays on the loop, where a thread hop costs more than the
work. Either way the task reads back exactly as it was written.

Each write runs under `async_to_sync`, as a request's does: the writer's database calls come
back to this thread, whose connection the test database's teardown closes."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import pytest
from a2a.types import a2a_pb2 as pb
from asgiref.sync import async_to_sync
from django.db.models import Model
from django.db.models.signals import post_init
from pytest_django.fixtures import Settings

from a2ahub.errors import InvalidParamsError
from agents.models import Agent
from tasks import writer
from tasks.changes import ArtifactChange, NewTask, StatusChange
from tasks.models import Artifact, Message, Task, TaskState
from tasks.reading import load_task
from tests.factories.messages import user_message

pytestmark = pytest.mark.django_db(transaction=True)

THRESHOLD = 1000
BIG = "b" * (THRESHOLD * 5)


@pytest.fixture
def agent(settings: Settings) -> Agent:
    settings.A2A_THREAD_BODY_BYTES = THRESHOLD
    return Agent.objects.create(slug="big", name="Big", description="Big writes.",
                                executor_kind="echo")  # fmt: skip


@contextmanager
def threads_making(model: type[Model]) -> Iterator[set[int]]:
    """The threads on which rows of `model` are made while the block runs."""
    seen: set[int] = set()

    def note(**kwargs: object) -> None:
        seen.add(threading.get_ident())

    post_init.connect(note, sender=model, weak=False)
    try:
        yield seen
    finally:
        post_init.disconnect(note, sender=model)


def new_task(agent: Agent, text: str) -> NewTask:
    return NewTask(agent_id=agent.pk, owner="apikey:big", context_id="ctx",
                   message=user_message(text), protocol_version="1.0",
                   execution_mode="inline", metadata={})  # fmt: skip


def stored(task_id: uuid.UUID) -> pb.Task:
    return load_task(Task.objects.get(id=task_id), None)


@pytest.mark.parametrize("text, on_loop", [("small", True), (BIG, False)], ids=["small", "big"])
def test_a_new_task_is_planned_on_the_loop_only_when_small(
    agent: Agent, text: str, on_loop: bool
) -> None:
    spec = new_task(agent, text)

    async def run() -> tuple[int, set[int]]:
        with threads_making(Message) as makers:
            await writer.open(spec, [StatusChange(TaskState.WORKING)])
        return threading.get_ident(), makers

    loop_thread, makers = async_to_sync(run)()

    assert len(makers) == 1
    assert (makers == {loop_thread}) is on_loop
    assert stored(spec.id).history[0].parts[0].text == text


@pytest.mark.parametrize("text, on_loop", [("small", True), (BIG, False)], ids=["small", "big"])
def test_a_change_is_planned_and_read_back_on_the_loop_only_when_small(
    agent: Agent, text: str, on_loop: bool
) -> None:
    spec = new_task(agent, "hi")
    artifact = pb.Artifact(artifact_id="answer", name="answer")
    artifact.parts.add(text=text)

    async def run() -> tuple[int, set[int], pb.Task | None]:
        opened = await writer.open(spec, [StatusChange(TaskState.WORKING)])
        with threads_making(Artifact) as makers:
            outcome = await writer.record(
                spec.id, TaskState.WORKING,
                [ArtifactChange(artifact), StatusChange(TaskState.COMPLETED)], opened.known,
            )  # fmt: skip
        return threading.get_ident(), makers, outcome.snapshot

    loop_thread, makers, snapshot = async_to_sync(run)()

    assert (makers == {loop_thread}) is on_loop
    assert snapshot is not None and snapshot.artifacts[0].parts[0].text == text
    task = stored(spec.id)
    assert task.status.state == pb.TASK_STATE_COMPLETED
    assert task.artifacts[0].parts[0].text == text


def test_the_message_a_follow_up_adds_is_planned_off_the_loop_when_big(agent: Agent) -> None:
    spec = new_task(agent, "hi")
    follow_up = user_message(BIG)

    async def run() -> tuple[int, set[int]]:
        await writer.open(spec, [StatusChange(TaskState.INPUT_REQUIRED)])
        with threads_making(Message) as makers:
            await writer.add_user_message(spec.id, "apikey:big", follow_up)
        return threading.get_ident(), makers

    loop_thread, makers = async_to_sync(run)()

    assert makers and loop_thread not in makers
    assert [m.parts[0].text for m in stored(spec.id).history] == ["hi", BIG]


def test_a_big_first_send_naming_a_task_that_exists_is_told_so(agent: Agent) -> None:
    # On PostgreSQL a big write's values are bound on the server, by psycopg itself: a
    # refused one still comes back as the error the writer answers for.
    first = new_task(agent, BIG)
    again = replace(new_task(agent, BIG), id=first.id, client_id=str(first.id))

    async def run() -> None:
        await writer.open(first, [StatusChange(TaskState.WORKING)])
        await writer.open(again, [StatusChange(TaskState.WORKING)])

    with pytest.raises(InvalidParamsError, match="another request is creating a task"):
        async_to_sync(run)()
    assert stored(first.id).history[0].parts[0].text == BIG
