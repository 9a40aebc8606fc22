"""Writes of a task with a webhook, from the event loop on PostgreSQL: a send that opens it (the
task, its whole first turn, the config and a delivery of each event), a change of it and a
follow-up that gives it another config are each one statement, which commits all of them or
none; the delivery engines are woken over Redis once it has run."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb
from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import IntegrityError
from django.utils import timezone

from a2ahub import asyncdb, bus, redis_clients
from agents.models import Agent
from push.configs import create_config
from push.engine import WAKE_CHANNEL
from push.models import Delivery, DeliveryState, PushNotificationConfig
from tasks import writer
from tasks.changes import Known, NewTask, StatusChange
from tasks.models import Task, TaskEvent, TaskState
from tests.factories.agents import make_agent
from tests.helpers import postgresql_only
from tests.tasks.test_one_statement_writes import a_whole_turn, new_task

S = TaskState
URL = "https://receiver.example.com/hooks/a2a"

pytestmark = [
    pytest.mark.django_db(transaction=True),
    postgresql_only("the one-statement writes are PostgreSQL's"),
]


@pytest.fixture
def agent(db: None) -> Agent:
    return make_agent("followed", push_notifications=True)


def with_webhook(spec: NewTask, config_id: str = "") -> NewTask:
    config = pb.TaskPushNotificationConfig(id=config_id, url=URL, token="tok-1")
    config.authentication.scheme = "Bearer"
    config.authentication.credentials = "secret-2"
    spec.push_config = config
    return spec


def on_a_loop_hearing_wakeups(write: Callable[[], Awaitable[Any]], seen: list[str]) -> list[str]:
    """Run `write` on an event loop of its own, counting its statements; the wake-up of the
    delivery engines Redis carried within two seconds, if one came."""

    async def run() -> list[str]:
        asyncdb.enabled.set(True)  # as the hub's ASGI app does for its requests
        client = redis_clients.async_client(settings.REDIS_URL, retries=0)
        pubsub = client.pubsub(ignore_subscribe_messages=True)
        await pubsub.subscribe(bus.channel_prefix(settings.REDIS_URL) + WAKE_CHANNEL)
        try:
            await asyncdb.pool()
            seen.clear()
            try:
                await write()
            finally:
                heard: list[str] = []
                until = time.monotonic() + 2.0
                while not heard and time.monotonic() < until:  # None: the subscription's own
                    if (message := await pubsub.get_message(timeout=0.1)) is not None:
                        # (after the publishing process's id, which the bus puts first)
                        heard.append(message["data"].decode().split(" ", 1)[1])
            return heard
        finally:
            await pubsub.aclose()
            await client.aclose()
            await asyncdb.close()

    return asyncio.run(run())


def test_a_new_task_its_webhook_and_every_delivery_are_one_statement(
    agent: Agent, loop_statements: list[str]
) -> None:
    spec = with_webhook(new_task(agent))
    before = timezone.now()

    heard = on_a_loop_hearing_wakeups(lambda: writer.open(spec, a_whole_turn()), loop_statements)

    assert len(loop_statements) == 1, loop_statements
    assert heard == [f"{spec.id} 4"]  # the task, and its last event: the engines' claims took it
    task = Task.objects.get(id=spec.id)
    assert (task.state, task.push_enabled) == (S.COMPLETED, True)
    config = PushNotificationConfig.objects.get(task=task)
    stored = (
        config.config_id,
        config.url,
        config.token,
        config.auth_scheme,
        config.auth_credentials,
        config.protocol_version,
        config.active,
        config.lease_until,
    )
    assert stored == ("default", URL, "tok-1", "Bearer", "secret-2", "1.0", True, None)
    deliveries = list(Delivery.objects.filter(config=config).order_by("sequence"))
    events = {e.id: e.sequence for e in TaskEvent.objects.filter(task=task)}
    assert [d.sequence for d in deliveries] == [1, 2, 3, 4]
    assert [events[d.event_id] for d in deliveries] == [1, 2, 3, 4]
    assert {d.state for d in deliveries} == {DeliveryState.PENDING}
    assert {d.attempts for d in deliveries} == {0}
    assert len({d.id for d in deliveries}) == 4
    assert all(before <= d.next_attempt_at <= timezone.now() for d in deliveries)


def test_a_named_webhook_keeps_its_name(agent: Agent, loop_statements: list[str]) -> None:
    spec = with_webhook(new_task(agent), config_id="mine")

    on_a_loop_hearing_wakeups(lambda: writer.open(spec), loop_statements)

    config = PushNotificationConfig.objects.get(task_id=spec.id)
    assert config.config_id == "mine"
    assert Delivery.objects.filter(config=config).count() == 1  # the new task's own event


def test_a_statement_that_fails_leaves_no_webhook_and_no_delivery(
    agent: Agent, loop_statements: list[str]
) -> None:
    first = new_task(agent)
    async_to_sync(writer.open)(first)
    clash = with_webhook(new_task(agent))
    clash.id = first.id  # the task exists: its INSERT fails, and every part with it

    async def write() -> None:
        with pytest.raises(IntegrityError):
            await writer.open(clash, a_whole_turn())

    assert on_a_loop_hearing_wakeups(write, loop_statements) == []

    assert not PushNotificationConfig.objects.exists()
    assert not Delivery.objects.exists()
    assert TaskEvent.objects.filter(task_id=first.id).count() == 1
    assert Task.objects.get(id=first.id).state == S.SUBMITTED


def test_a_change_of_a_followed_task_and_its_deliveries_are_one_statement(
    agent: Agent, loop_statements: list[str]
) -> None:
    spec = with_webhook(new_task(agent))
    async_to_sync(writer.open)(spec)
    known = Known(spec.context_id, 1, {}, push_enabled=True)

    heard = on_a_loop_hearing_wakeups(
        lambda: writer.record(spec.id, S.SUBMITTED, a_whole_turn(), known), loop_statements
    )

    assert len(loop_statements) == 1, loop_statements
    assert heard == [f"{spec.id} 4"]  # the turn wrote events 2 to 4
    assert Task.objects.get(id=spec.id).state == S.COMPLETED
    deliveries = Delivery.objects.filter(config__task_id=spec.id).order_by("sequence")
    events = {e.id: e.sequence for e in TaskEvent.objects.filter(task_id=spec.id)}
    assert [(d.sequence, events[d.event_id]) for d in deliveries] == [(n, n) for n in (1, 2, 3, 4)]


def test_a_task_that_got_a_webhook_meanwhile_has_its_change_delivered(agent: Agent) -> None:
    spec = new_task(agent)
    async_to_sync(writer.open)(spec)
    known = Known(spec.context_id, 1, {}, push_enabled=False)  # as its runner last knew it
    config = pb.TaskPushNotificationConfig(id="late", url=URL)
    create_config(Task.objects.get(id=spec.id), config)

    async_to_sync(writer.record)(spec.id, S.SUBMITTED, [StatusChange(S.WORKING)], known)

    assert known.push_enabled is True
    assert list(Delivery.objects.values_list("sequence", flat=True)) == [2]


def test_a_follow_up_with_a_webhook_is_one_statement(
    agent: Agent, loop_statements: list[str]
) -> None:
    spec = with_webhook(new_task(agent), config_id="first")
    question = StatusChange(S.INPUT_REQUIRED)
    async_to_sync(writer.open)(spec, [question])
    task = Task.objects.get(id=spec.id)
    second = pb.TaskPushNotificationConfig(id="second", url=URL + "/2")
    answer = pb.Message(message_id="answer", role=pb.ROLE_USER)
    answer.parts.add(text="yes")

    heard = on_a_loop_hearing_wakeups(
        lambda: writer.add_user_message(task, spec.owner, answer, second, 1), loop_statements
    )

    assert len(loop_statements) == 1, loop_statements
    assert len(heard) == 1
    assert Task.objects.get(id=spec.id).state == S.WORKING
    delivered = Delivery.objects.filter(sequence=3).values_list("config__config_id", flat=True)
    assert sorted(delivered) == ["first", "second"]
