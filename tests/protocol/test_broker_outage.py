"""A stored task's turn is not lost to a Redis broker that is away: the send answers with the
task it stored, and the turn is handed to the workers as soon as the broker is back."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pytest_django.fixtures import Settings

from a2ahub import worker
from agents.models import Agent
from push.engine import WAKE_CHANNEL
from push.jobs import sweep_due_deliveries
from push.models import Delivery
from tasks.models import Task
from tests.factories.agents import secured_agent
from tests.factories.envelopes import NON_BLOCKING
from tests.factories.versions import V1, VERSIONS
from tests.helpers import eventually, free_port
from tests.integration.servers import redis_server
from tests.protocol.answers import state_of
from tests.protocol.callers import Caller

pytestmark = pytest.mark.django_db


@pytest.fixture
def echo_worker(db: None) -> Agent:
    return secured_agent("echo-worker", execution_mode="worker")


@pytest.fixture
def away_broker(settings: Settings) -> Iterator[int]:
    """The hub's Redis (broker and events) on a port where nothing listens yet."""
    port = free_port()
    settings.REDIS_URL = settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{port}/0"
    worker.broker.cache_clear()
    yield port
    worker.broker.cache_clear()


@pytest.mark.parametrize("version", VERSIONS)
def test_a_send_while_the_broker_is_away_answers_with_the_task_and_its_turn_is_queued_later(
    caller: Caller, echo_worker: Agent, away_broker: int, version: str
) -> None:
    task = caller.send("echo-worker", version, "ping", configuration=NON_BLOCKING[version])

    assert state_of(task) == "submitted"
    assert Task.objects.filter(id=task["id"]).exists()
    with redis_server(away_broker) as broker:

        def queued() -> bool:
            return any(task["id"].encode() in job for job in broker.lrange("celery", 0, -1))

        assert eventually(queued, timeout=5), "the turn never reached the broker"


@pytest.fixture
def pushing_echo(transactional_db: None) -> Agent:
    """Its deliveries are kicked after commit: the test's writes must commit for real."""
    return secured_agent("pushing-echo", push_notifications=True)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_send_with_a_webhook_while_the_broker_is_away_answers_and_delivers_later(
    caller: Caller, pushing_echo: Agent, away_broker: int, version: str
) -> None:
    config = {"url": "https://receiver.example/hook"}
    push = (
        {"taskPushNotificationConfig": config} if version == V1
        else {"pushNotificationConfig": config}
    )  # fmt: skip

    task = caller.send("pushing-echo", version, "ping", configuration=push)

    assert state_of(task) == "completed"
    assert Delivery.objects.filter(config__task_id=task["id"], state="pending").count() == 4
    with redis_server(away_broker) as broker:
        # The wake-up of the send's commit was lost with Redis; the periodic sweep (beat sends
        # it every TASK_HEARTBEAT_SECONDS) wakes the delivery engines listening now.
        engines = broker.pubsub(ignore_subscribe_messages=True)
        engines.subscribe(WAKE_CHANNEL)
        assert eventually(lambda: broker.pubsub_numsub(WAKE_CHANNEL)[0][1] == 1)

        assert sweep_due_deliveries() == 1  # the task's one config

        assert eventually(lambda: engines.get_message(timeout=0.1) is not None, timeout=5), (
            "no engine was woken"
        )
        engines.close()


@pytest.mark.parametrize("version", VERSIONS)
def test_a_cancel_while_redis_is_away_answers_with_the_canceled_task(
    caller: Caller, echo_worker: Agent, away_broker: int, version: str
) -> None:
    """The cancel is stored before anyone is told: a runner elsewhere that cannot be reached
    meets it at its next write, so the caller gets the canceled task, not an error."""
    task = caller.send("echo-worker", version, "ping", configuration=NON_BLOCKING[version])

    canceled = caller.result("echo-worker", version, "cancel", {"id": task["id"]})

    assert state_of(canceled) == "canceled"
    assert Task.objects.get(id=task["id"]).state == "canceled"
    with redis_server(away_broker) as broker:  # the held turn leaves with the broker's return

        def queued() -> bool:
            return any(task["id"].encode() in job for job in broker.lrange("celery", 0, -1))

        assert eventually(queued, timeout=5), "the turn never reached the broker"
