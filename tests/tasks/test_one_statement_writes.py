"""Every write the code calls one statement is one statement (PostgreSQL): a new task with its
whole first turn, a stored task's batch of changes, and a job's claim of its task with the
task's messages, from Django's connection and from the event loop's.

Django's connection is counted with pytest-django's `django_assert_num_queries`; the loop's
(asyncpg) with `loop_statements` (tests/conftest.py). Outside a test transaction: the
one-statement writes are autocommit's.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb
from asgiref.sync import async_to_sync
from django.utils import timezone
from pytest_django.fixtures import DjangoAssertNumQueries, Settings

from a2ahub import asyncdb
from agents.models import Agent
from tasks import changes, sql, writer
from tasks.changes import ArtifactChange, Known, NewTask, StatusChange
from tasks.models import Artifact, Message, Task, TaskEvent, TaskState
from tests.factories.messages import user_message
from tests.helpers import postgresql_only

S = TaskState
OWNER = "apikey:counted"

pytestmark = [
    pytest.mark.django_db(transaction=True),
    postgresql_only("the one-statement writes are PostgreSQL's"),
]


@pytest.fixture
def agent(db: None) -> Agent:
    return Agent.objects.create(
        slug="counted", name="Counted", description="Its writes are counted.", executor_kind="echo"
    )


@pytest.fixture
def no_redis(settings: Settings) -> None:
    # The loop's writes publish their events to Redis in a task of the loop, which ends with
    # the write here; this process's own subscribers (none) are all they need to reach.
    settings.REDIS_URL = ""


def on_a_loop(write: Callable[[], Awaitable[Any]], seen: list[str]) -> Any:
    """Run `write` on an event loop of its own, counting only its statements (not the pool's
    set-up), then close the loop's pool."""

    async def run() -> Any:
        asyncdb.enabled.set(True)  # as the hub's ASGI app does for its requests
        try:
            await asyncdb.pool()
            seen.clear()
            return await write()
        finally:
            await asyncdb.close()

    return asyncio.run(run())


def new_task(agent: Agent) -> NewTask:
    return NewTask(agent_id=agent.pk, owner=OWNER, context_id="ctx", message=user_message("hi"),
                   protocol_version="1.0", execution_mode="inline", metadata={"n": 1})  # fmt: skip


def a_whole_turn() -> list[changes.Change]:
    artifact = pb.Artifact(artifact_id="answer", name="answer")
    artifact.parts.add(text="hello")
    reply = pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_AGENT)
    reply.parts.add(text="done")
    return [StatusChange(S.WORKING), ArtifactChange(artifact), StatusChange(S.COMPLETED, reply)]


def stored_task(agent: Agent) -> tuple[uuid.UUID, Known]:
    """A new task, and all its runner knows of it."""
    spec = new_task(agent)
    async_to_sync(writer.open)(spec)
    return spec.id, Known("ctx", 1, {}, False, {"n": 1}, [])


def assert_whole_turn_stored(task_id: uuid.UUID) -> None:
    assert Task.objects.get(id=task_id).state == S.COMPLETED
    assert Message.objects.filter(task_id=task_id).count() == 2
    assert Artifact.objects.filter(task_id=task_id).count() == 1
    assert TaskEvent.objects.filter(task_id=task_id).count() == 4


def test_a_new_task_and_its_first_turn_are_stored_in_one_statement(
    agent: Agent, django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    spec = new_task(agent)

    with django_assert_num_queries(1):
        async_to_sync(writer.open)(spec, a_whole_turn())

    assert_whole_turn_stored(spec.id)


def test_a_stored_tasks_batch_of_changes_is_one_statement(
    agent: Agent, django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    task_id, known = stored_task(agent)

    with django_assert_num_queries(1):
        async_to_sync(writer.record)(task_id, S.SUBMITTED, a_whole_turn(), known)

    assert_whole_turn_stored(task_id)


def test_a_job_claims_its_task_with_the_tasks_messages_in_one_statement(
    agent: Agent, django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    spec, token = new_task(agent), f"queued:{uuid.uuid4().hex}"
    async_to_sync(writer.open)(spec, runner=token)

    with django_assert_num_queries(1):
        claimed = sql.claim_task(str(spec.id), token, "me", timezone.now())

    assert claimed is not None
    assert [m.message_id for m in claimed.messages] == [spec.message.message_id]
    assert Task.objects.get(id=spec.id).runner == "me"


def test_a_new_task_from_the_event_loop_is_one_statement(
    agent: Agent, loop_statements: list[str], no_redis: None
) -> None:
    spec = new_task(agent)

    on_a_loop(lambda: writer.open(spec, a_whole_turn()), loop_statements)

    assert len(loop_statements) == 1, loop_statements
    assert_whole_turn_stored(spec.id)


def test_a_batch_of_changes_from_the_event_loop_is_one_statement(
    agent: Agent, loop_statements: list[str], no_redis: None
) -> None:
    task_id, known = stored_task(agent)

    outcome = on_a_loop(
        lambda: writer.record(task_id, S.SUBMITTED, a_whole_turn(), known),
        loop_statements,
    )

    assert outcome is not None
    assert len(loop_statements) == 1, loop_statements
    assert_whole_turn_stored(task_id)
