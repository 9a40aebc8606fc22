"""A receiver that answers again: its waiting deliveries are made due at once, every queue of
its origin (scheme, host, port) whole, a bounded number of queues at a time; the engine judges
which receivers are back from what they answered; while one fails, one of its queues is tried
again every PUSH_PROBE_SECONDS (unless its Retry-After asks for longer) and the others wait
their backoff; and an embedded hub's backlog goes out in order, once, as soon as the receiver
is back, not at the end of each retry's wait, also with no new webhook to find it back."""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest
from a2a.types import a2a_pb2 as pb
from django.db import connection
from django.utils import timezone

from agents.models import Agent
from push import receivers
from push.claims import Item
from push.configs import create_config
from push.delivery import RETRY, Result
from push.models import Delivery, DeliveryState, PushNotificationConfig
from push.receivers import Answers, Probes
from tasks.models import Task
from tests.factories.push import webhook
from tests.factories.tasks import open_task
from tests.factories.versions import V1
from tests.helpers import eventually, postgresql_only
from tests.push.callers import Caller, deliveries_of, sequences_of
from tests.push.receiver import Behaviour, Receiver

HOOKS = "https://hooks.example.com:443"
LATER = timedelta(hours=1)


def waiting_queue(task: Task, url: str, waiting: int = 2, active: bool = True) -> list[Delivery]:
    """A config of `task` at `url` whose `waiting` deliveries wait for a retry an hour away."""
    config = PushNotificationConfig.objects.create(
        task=task, config_id=f"hook-{PushNotificationConfig.objects.count()}", url=url,
        protocol_version=V1, active=active,
    )  # fmt: skip
    event, later = task.events.get(), timezone.now() + LATER
    made = (dict(config=config, event=event, sequence=n, attempts=1, next_attempt_at=later)
            for n in range(1, waiting + 1))  # fmt: skip
    return [Delivery.objects.create(**fields) for fields in made]


def due(deliveries: list[Delivery]) -> list[bool]:
    now = timezone.now()
    return [Delivery.objects.get(pk=d.pk).next_attempt_at <= now for d in deliveries]


@pytest.mark.django_db
def test_only_the_waiting_deliveries_of_that_origin_are_made_due(pusher: Agent) -> None:
    task = open_task(pusher)
    first = waiting_queue(task, "https://hooks.example.com/a")
    # The same receiver, spelled otherwise: case, a trailing dot, the default port.
    second = waiting_queue(task, "HTTPS://Hooks.Example.COM.:443/b?tenant=2", waiting=1)
    other_port = waiting_queue(task, "https://hooks.example.com:8443/a")
    other_host = waiting_queue(task, "https://example.com/a")
    turned_off = waiting_queue(task, "https://hooks.example.com/c", active=False)
    delivered = waiting_queue(task, "https://hooks.example.com/d", waiting=1)
    Delivery.objects.filter(pk=delivered[0].pk).update(state=DeliveryState.DELIVERED)

    assert receivers.make_due(HOOKS) == 3

    assert due(first + second) == [True, True, True]
    assert due(other_port + other_host + turned_off + delivered) == [False] * 7


@pytest.mark.django_db
def test_a_success_makes_at_most_push_concurrency_queues_due_the_oldest_first_each_whole(
    pusher: Agent, settings: Any
) -> None:
    settings.PUSH_CONCURRENCY = 2
    task = open_task(pusher)
    oldest, older, newest = (waiting_queue(task, f"{HOOKS}/{n}", waiting=3) for n in range(3))

    assert receivers.make_due(HOOKS) == 6
    assert due(oldest + older) == [True] * 6
    assert due(newest) == [False] * 3
    # The next success there makes the rest due.
    assert receivers.make_due(HOOKS) == 3


@pytest.mark.django_db
def test_a_config_keeps_the_origin_of_its_url_when_the_url_changes(pusher: Agent) -> None:
    task = open_task(pusher)
    given = webhook(V1, "https://Hooks.Example.com/a")
    config = create_config(task, pb_config(given, "hook"))
    assert config.origin == HOOKS

    create_config(task, pb_config(webhook(V1, "http://other.example.com:8080/b"), "hook"))

    assert (
        PushNotificationConfig.objects.get(pk=config.pk).origin == "http://other.example.com:8080"
    )


def pb_config(fields: dict[str, Any], config_id: str) -> pb.TaskPushNotificationConfig:
    return pb.TaskPushNotificationConfig(id=config_id, url=fields["url"], token=fields["token"])


@postgresql_only("rows held by another transaction: SQLite has one writer at a time")
@pytest.mark.django_db(transaction=True)
def test_deliveries_another_transaction_holds_are_skipped_not_waited_for(pusher: Agent) -> None:
    task = open_task(pusher)
    held = waiting_queue(task, f"{HOOKS}/held", waiting=1)
    free = waiting_queue(task, f"{HOOKS}/free", waiting=1)
    url = connection.settings_dict
    dsn = f"host={url['HOST']} port={url['PORT'] or 5432} user={url['USER']} dbname={url['NAME']}"
    with psycopg.connect(dsn, password=url["PASSWORD"] or None) as other:
        # Another engine's batch, recording the outcome of that queue: it holds the row.
        other.execute("SELECT 1 FROM push_delivery WHERE id = %s FOR UPDATE", (held[0].pk,))
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '5s'")  # a wait would fail, not hang the test
        try:
            assert receivers.make_due(HOOKS) == 1
        finally:
            with connection.cursor() as cursor:
                cursor.execute("RESET lock_timeout")
        other.rollback()

    assert due(held + free) == [False, True]


def test_a_delivery_that_succeeds_after_failing_brings_its_receiver_back() -> None:
    answers = Answers()
    answers.add(HOOKS, delivered=True, attempts=3)
    assert answers.take() == [HOOKS]
    assert answers.take() == []  # told once


def test_a_first_success_where_this_engine_saw_failures_brings_the_receiver_back() -> None:
    answers = Answers()
    answers.add(HOOKS, delivered=False, attempts=1)
    assert answers.take() == []
    answers.add(HOOKS, delivered=True, attempts=1)
    assert answers.take() == [HOOKS]
    answers.add(HOOKS, delivered=True, attempts=1)
    assert answers.take() == []  # no longer failing: a success is no news


def test_a_receiver_that_mostly_fails_is_not_back_until_it_mostly_succeeds() -> None:
    answers = Answers()
    answers.add(HOOKS, delivered=True, attempts=2)
    answers.add(HOOKS, delivered=False, attempts=2)
    answers.add(HOOKS, delivered=False, attempts=1)
    assert answers.take() == []
    answers.add(HOOKS, delivered=True, attempts=1)
    assert answers.take() == [HOOKS]


def test_a_success_at_a_receiver_that_never_failed_is_no_news() -> None:
    answers = Answers()
    answers.add("https://example.com:443", delivered=False, attempts=1)
    answers.add(HOOKS, delivered=True, attempts=1)
    assert answers.take() == []


def failed() -> Item:
    """A delivery whose first attempt just failed."""
    now = timezone.now()
    return Item(uuid.uuid4(), 1, 1, attempts=1, next_attempt_at=now, created_at=now, test=False,
                payload="{}")  # fmt: skip


def waits(when: datetime | None) -> float:
    """How many seconds away a retry is."""
    assert when is not None
    return (when - timezone.now()).total_seconds()


@pytest.fixture
def long_backoff(settings: Any) -> Any:
    """A first retry 5 to 15 minutes away, probes every 15 s."""
    settings.PUSH_RETRY_BASE_SECONDS = 600.0
    settings.PUSH_RETRY_MAX_SECONDS = settings.PUSH_RETRY_HORIZON_SECONDS = 3600.0
    settings.PUSH_PROBE_SECONDS = 15.0
    return settings


@pytest.mark.usefixtures("long_backoff")
def test_one_queue_per_failing_receiver_is_probed_the_others_wait_their_backoff() -> None:
    probes, refused = Probes(), Result(RETRY, 503)
    heads = [failed() for _ in range(5)]
    at_hooks = [waits(probes.retry_at(HOOKS, head, refused)) for head in heads]
    elsewhere = waits(probes.retry_at("https://example.com:443", failed(), refused))

    assert at_hooks[0] <= 15
    assert all(wait >= 300 for wait in at_hooks[1:])
    assert elsewhere <= 15  # each receiver has a probe of its own
    # The probe fails again: it stays the probe; the others, failing again, keep waiting long.
    heads[0].attempts = heads[1].attempts = 2
    assert waits(probes.retry_at(HOOKS, heads[0], refused)) <= 15
    assert waits(probes.retry_at(HOOKS, heads[1], refused)) >= 600


@pytest.mark.usefixtures("long_backoff")
def test_a_probe_waits_as_long_as_the_receivers_retry_after_asks() -> None:
    """A receiver in maintenance that says when to come back is not asked sooner, and no other
    queue there is tried earlier than its backoff meanwhile."""
    probes = Probes()
    maintenance = Result(RETRY, 503, retry_after=120.0)
    assert 119 <= waits(probes.retry_at(HOOKS, failed(), maintenance)) <= 120
    assert waits(probes.retry_at(HOOKS, failed(), Result(RETRY, 503))) >= 300


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("push_settings")
def test_a_receiver_back_with_no_new_webhook_gets_its_backlog_within_the_probe_interval(
    caller: Caller, pusher: Agent, settings: Any
) -> None:
    """Embedded: five configs at a receiver answering 503, on a backoff that makes each wait five
    minutes or more; one of them (the probe) is tried again every PUSH_PROBE_SECONDS, the others
    are not; the receiver comes back and no task is sent: the probe finds it back, and the
    backlog follows within seconds, each queue in order, once."""
    settings.PUSH_RETRY_BASE_SECONDS = 600.0
    settings.PUSH_RETRY_MAX_SECONDS = settings.PUSH_RETRY_HORIZON_SECONDS = 3600.0
    settings.PUSH_PROBE_SECONDS = probe = 1.0
    receiver = Receiver(Behaviour(fail_first=10**9, fail_status=503))
    paths = [f"/{n}" for n in range(5)]
    try:
        tasks = [caller.send("pusher", V1, push=webhook(V1, receiver.url + path))["id"]
                 for path in paths]  # fmt: skip

        def tried() -> list[int]:
            """Requests per config so far, the most first."""
            return sorted((sum(r.path.endswith(p) for r in receiver.requests) for p in paths),
                          reverse=True)  # fmt: skip

        assert eventually(lambda: tried()[0] >= 3, timeout=15)
        assert tried()[1:] == [1, 1, 1, 1]

        back = time.monotonic()
        receiver.behaviour = Behaviour()
        assert eventually(lambda: all(delivered(t) for t in tasks), timeout=probe + 9)
        took = time.monotonic() - back
        accepted = receiver.accepted()
    finally:
        receiver.down()

    assert took < probe + 9
    for path, task_id in zip(paths, tasks, strict=True):
        got = [r for r in accepted if r.path.endswith(path)]
        assert sequences_of(got) == [d.sequence for d in deliveries_of(task_id)] == [1, 2, 3, 4]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("push_settings")
def test_a_backlog_goes_out_in_order_once_as_soon_as_its_receiver_is_back(
    caller: Caller, pusher: Agent, settings: Any
) -> None:
    """Embedded: the receiver asked for retries a minute away; once back, a new task's
    webhook succeeds there, and the backlog follows at once, each queue in order, once."""
    settings.PUSH_RETRY_MAX_SECONDS = settings.PUSH_RETRY_HORIZON_SECONDS = 600.0
    # Down: 503, asking for a retry a minute later.
    receiver = Receiver(Behaviour(fail_first=10**9, fail_status=503,
                                  fail_headers={"Retry-After": "60"}))  # fmt: skip
    try:
        backlog = [caller.send("pusher", V1, push=webhook(V1, f"{receiver.url}/{n}"))["id"]
                   for n in range(2)]  # fmt: skip
        heads = [deliveries_of(task_id)[0] for task_id in backlog]
        assert eventually(lambda: all(Delivery.objects.get(pk=d.pk).attempts for d in heads))
        waiting_until = timezone.now() + timedelta(seconds=30)
        assert all(d.next_attempt_at > waiting_until for t in backlog for d in deliveries_of(t))

        receiver.behaviour = Behaviour()  # back
        fresh = caller.send("pusher", V1, push=webhook(V1, f"{receiver.url}/fresh"))["id"]

        tasks = [*backlog, fresh]
        assert eventually(lambda: all(delivered(t) for t in tasks), timeout=15)
        accepted = receiver.accepted()
    finally:
        receiver.down()

    for n, task_id in zip(["0", "1", "fresh"], tasks, strict=True):
        got = [r for r in accepted if r.path.endswith(f"/{n}")]
        assert sequences_of(got) == [d.sequence for d in deliveries_of(task_id)] == [1, 2, 3, 4]


def delivered(task_id: str) -> bool:
    return {d.state for d in deliveries_of(task_id)} == {DeliveryState.DELIVERED}
