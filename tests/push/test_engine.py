"""The delivery engine as receivers and operators see it: a receiver that takes its time holds
its own queue and no other, a queue whose holder died is taken over with the lost attempt on
record, each batch of outcomes leaves every kind of delivery as it should, and the attempts
counter moves by exactly the attempts made, and a wake-up for a task makes no claim in an engine
that already works the task's queue. (Embedded: the engine runs in this process.)"""

from __future__ import annotations

import logging
import re
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from a2ahub import asyncdb
from agents.models import Agent
from push import claims, engine, jobs, outcomes
from push.models import Delivery, DeliveryAttempt, DeliveryState, PushNotificationConfig
from push.outcomes import Outcome
from tasks.models import Task
from tests.door_client import Door
from tests.factories.push import webhook
from tests.factories.tasks import open_task
from tests.factories.versions import V1
from tests.helpers import eventually, postgresql_only
from tests.push.callers import Caller, deliveries_of, sequences_of
from tests.push.receiver import Behaviour, HeldReceiver, Receiver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("push_settings")]

EVENTS = 4  # the echo agent's task: submitted, working, its artifact, completed


def test_a_receiver_that_does_not_answer_holds_only_its_own_queue(
    caller: Caller, pusher: Agent, settings: Any
) -> None:
    settings.PUSH_TIMEOUT_SECONDS = 60.0  # the held request must stay in flight, not time out
    slow = HeldReceiver()
    fast = [Receiver() for _ in range(6)]
    try:
        slow_task = caller.send("pusher", V1, push=webhook(V1, slow.url))
        slow.wait_for(1, accepted=False)
        for receiver in fast:
            caller.send("pusher", V1, push=webhook(V1, receiver.url))

        for receiver in fast:
            assert sequences_of(receiver.wait_for(EVENTS)) == [1, 2, 3, 4]
        # Meanwhile the slow queue had its first delivery in flight, and nothing after it.
        assert len(slow.requests) == 1 and not slow.answer_all.is_set()

        slow.answer_all.set()
        got = slow.wait_for(EVENTS)
    finally:
        slow.answer_all.set()
        for receiver in [slow, *fast]:
            receiver.down()

    assert sequences_of(got) == [1, 2, 3, 4]
    assert len({r.header("webhook-id") for r in got}) == EVENTS  # the held one was not resent
    assert eventually(
        lambda: {d.state for d in deliveries_of(slow_task["id"])} == {DeliveryState.DELIVERED}
    )


def test_a_queue_whose_holder_died_is_taken_over_and_the_lost_attempt_recorded(
    pusher: Agent, receiver: Receiver
) -> None:
    task = open_task(pusher)
    event = task.events.get()
    # A process claimed the queue, maybe sent the delivery, and died: its lease ran out.
    config = PushNotificationConfig.objects.create(
        task=task, config_id="hook", url=receiver.url, protocol_version=V1,
        lease_until=timezone.now() - timedelta(seconds=1),
    )  # fmt: skip
    delivery = Delivery.objects.create(
        config=config, event=event, sequence=event.sequence, next_attempt_at=timezone.now()
    )

    assert jobs.sweep_due_deliveries() == 1
    (got,) = receiver.wait_for(1)

    assert got.header("webhook-id") == str(delivery.id)
    assert eventually(lambda: Delivery.objects.get(pk=delivery.pk).state == "delivered")
    attempts = DeliveryAttempt.objects.filter(delivery=delivery).order_by("started_at")
    assert [(a.status_code, a.error) for a in attempts] == [
        (None, outcomes.LOST_ERROR), (200, ""),
    ]  # fmt: skip
    assert Delivery.objects.get(pk=delivery.pk).attempts == 2
    assert PushNotificationConfig.objects.get(pk=config.pk).lease_until is None


def queue_of(task: Task, name: str, events: int = 2) -> tuple[PushNotificationConfig, list[Any]]:
    """A leased config of the task with `events` pending deliveries (of its one event)."""
    config = PushNotificationConfig.objects.create(
        task=task, config_id=name, url=f"https://{name}.example.com/hook", protocol_version=V1,
        lease_until=timezone.now() + timedelta(minutes=1),
    )  # fmt: skip
    event = task.events.get()
    items = [
        Delivery.objects.create(
            config=config, event=event, sequence=n, next_attempt_at=timezone.now()
        )
        for n in range(1, events + 1)
    ]
    return config, items


def test_one_batch_leaves_each_kind_of_outcome_as_it_should(pusher: Agent) -> None:
    task = open_task(pusher)
    sent, (sent_1, sent_2) = queue_of(task, "sent")
    failing, (failing_1, failing_2) = queue_of(task, "failing")
    given_up, (given_up_1, given_up_2) = queue_of(task, "given-up")
    gone, (gone_1, gone_2) = queue_of(task, "gone")
    deleted, (deleted_1,) = queue_of(task, "deleted", events=1)
    now = timezone.now()
    retry_at = now + timedelta(minutes=5)
    batch = [
        Outcome(sent_1.id, sent.pk, outcomes.LOST, now, error=outcomes.LOST_ERROR),
        Outcome(sent_1.id, sent.pk, outcomes.DELIVERED, now, 12, 200, excerpt="ok"),
        Outcome(
            failing_1.id, failing.pk, outcomes.RETRY, now, 30, 503, "HTTP 503", retry_at=retry_at
        ),
        Outcome(given_up_1.id, given_up.pk, outcomes.ABANDONED, now, 5, 500, "HTTP 500"),
        Outcome(gone_1.id, gone.pk, outcomes.GONE, now, 3, 410, outcomes.GONE_REASON),
        Outcome(deleted_1.id, deleted.pk, outcomes.DELIVERED, now, 4, 200),
    ]
    deleted_1.delete()  # its task's retention, say, while it was sent

    outcomes.record(batch, [sent.pk, failing.pk, given_up.pk, gone.pk, deleted.pk])

    def row(item: Delivery) -> Delivery:
        return Delivery.objects.get(pk=item.pk)

    assert (row(sent_1).state, row(sent_1).attempts) == (DeliveryState.DELIVERED, 2)
    assert row(sent_1).delivered_at is not None
    assert (row(sent_2).state, row(sent_2).attempts) == (DeliveryState.PENDING, 0)
    # A retry waits for its time, and the rest of its queue behind it.
    assert (row(failing_1).state, row(failing_1).attempts) == (DeliveryState.PENDING, 1)
    assert row(failing_1).next_attempt_at == retry_at
    assert row(failing_1).last_error == "HTTP 503"
    assert row(failing_2).next_attempt_at >= retry_at
    assert PushNotificationConfig.objects.get(pk=failing.pk).last_error == "HTTP 503"
    # Given up on: the queue goes on with the next one.
    assert (row(given_up_1).state, row(given_up_1).last_error) == ("abandoned", "HTTP 500")
    assert row(given_up_2).state == DeliveryState.PENDING
    # 410: the config is off and nothing of it is pending.
    turned_off = PushNotificationConfig.objects.get(pk=gone.pk)
    assert not turned_off.active and "410" in turned_off.disabled_reason
    assert {row(gone_1).state, row(gone_2).state} == {DeliveryState.ABANDONED}
    assert row(gone_1).attempts == 1
    # Every attempt has its row; every queue is released.
    attempts = {(str(a.delivery_id), a.status_code) for a in DeliveryAttempt.objects.all()}
    assert attempts == {(str(sent_1.id), None), (str(sent_1.id), 200), (str(failing_1.id), 503),
                        (str(given_up_1.id), 500), (str(gone_1.id), 410)}  # fmt: skip
    assert DeliveryAttempt.objects.count() == 5
    assert not PushNotificationConfig.objects.filter(lease_until__isnull=False).exists()


def attempts_counted(door: Door) -> dict[str, int]:
    response = door.get("/metrics")
    assert response.status_code == 200
    found = re.findall(
        r'^a2ahub_push_attempts_total\{outcome="(\w+)"\} ([0-9.e+]+)$',
        response.content.decode(),
        re.M,
    )
    return {outcome: int(float(value)) for outcome, value in found}


def test_the_attempts_counter_moves_by_exactly_the_attempts_made(
    caller: Caller, pusher: Agent, door: Door
) -> None:
    before = attempts_counted(door)
    receiver = Receiver(Behaviour(fail_first=2, fail_status=503))
    try:
        task = caller.send("pusher", V1, push=webhook(V1, receiver.url))
        receiver.wait_for(EVENTS)
        assert eventually(
            lambda: {d.state for d in deliveries_of(task["id"])} == {DeliveryState.DELIVERED}
        )
        assert receiver.stays_at(len(receiver.requests), 0.3)
    finally:
        receiver.down()

    after = attempts_counted(door)
    moved = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    assert {k: n for k, n in moved.items() if n} == {"delivered": EVENTS, "retry": 2}
    assert DeliveryAttempt.objects.filter(delivery__config__task_id=task["id"]).count() == 6


def test_a_test_delivery_from_the_admin_is_sent_once_even_when_it_fails(
    pusher: Agent, settings: Any
) -> None:
    receiver = Receiver(Behaviour(status=500))
    try:
        task = open_task(pusher)
        config = PushNotificationConfig.objects.create(
            task=task, config_id=f"t-{uuid.uuid4().hex[:6]}", url=receiver.url,
            protocol_version=V1,
        )  # fmt: skip
        event = task.events.get()
        item = Delivery.objects.create(config=config, event=event, sequence=event.sequence,
                                       next_attempt_at=timezone.now(), test=True)  # fmt: skip
        engine.wake(str(task.id))
        receiver.wait_for(1, accepted=False)
        assert eventually(lambda: Delivery.objects.get(pk=item.pk).state == "abandoned")
        assert receiver.stays_at(1, 0.5), "a test delivery was retried"
    finally:
        receiver.down()


@postgresql_only("a connection held while idle dies with its server process")
def test_a_held_connection_that_died_is_replaced_without_an_error(
    caller: Caller, pusher: Agent, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    caller.send("pusher", V1, push=webhook(V1, receiver.url))
    receiver.wait_for(EVENTS)
    running = engine.running()
    assert running is not None and eventually(lambda: running.idle and running.connected_at > 0)
    # What a restart of the database does to the connection the idle engine holds.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    # The door's own pool lost its connections too, and hands a dead one out once per
    # connection (it checks none before use): that is not what this test is about.
    caller.client.loop.run(replace_door_connections())
    caplog.set_level(logging.INFO, logger="push")

    caller.send("pusher", V1, push=webhook(V1, receiver.url))

    assert len(receiver.wait_for(2 * EVENTS)) == 2 * EVENTS
    complaints = [
        r for r in caplog.records if r.name.startswith("push") and r.levelno >= logging.WARNING
    ]
    assert not [r.getMessage() for r in complaints]


async def replace_door_connections() -> None:
    await (await asyncdb.pool()).expire_connections()


def wakeups_counted(door: Door) -> dict[str, int]:
    response = door.get("/metrics")
    found = re.findall(
        r'^a2ahub_push_wakeups_total\{outcome="(\w+)"\} ([0-9.e+]+)$',
        response.content.decode(),
        re.M,
    )
    return {outcome: int(float(value)) for outcome, value in found}


def moved(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: n - before.get(k, 0) for k, n in after.items() if n != before.get(k, 0)}


def test_a_wake_up_for_a_task_whose_queue_the_engine_works_makes_no_claim(
    caller: Caller, pusher: Agent, door: Door
) -> None:
    slow = HeldReceiver()
    try:
        task = caller.send("pusher", V1, push=webhook(V1, slow.url))
        slow.wait_for(1, accepted=False)  # the engine works the task's queue: one in flight
        time.sleep(3 * engine.COUNT_EVERY_SECONDS)  # the send's own wake-ups are counted
        before = wakeups_counted(door)

        for _ in range(3):
            engine.wake(task["id"])

        assert eventually(lambda: moved(before, wakeups_counted(door)).get("held") == 3)
        time.sleep(3 * engine.COUNT_EVERY_SECONDS)
        assert moved(before, wakeups_counted(door)) == {"held": 3}  # no claim, found or not
        slow.answer_all.set()
        assert sequences_of(slow.wait_for(EVENTS)) == [1, 2, 3, 4]  # and nothing was missed
    finally:
        slow.answer_all.set()
        slow.down()


def test_a_wake_up_that_found_nothing_to_send_shows_in_the_metrics(
    pusher: Agent, door: Door
) -> None:
    task = open_task(pusher)  # no webhook: nothing to deliver
    engine.wake(str(task.id))  # the engine starts, and claims whatever is due
    assert eventually(lambda: wakeups_counted(door).get("empty", 0) > 0)
    time.sleep(3 * engine.COUNT_EVERY_SECONDS)
    before = wakeups_counted(door)

    engine.wake(str(task.id))

    assert eventually(lambda: moved(before, wakeups_counted(door)) == {"empty": 1})


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The configs the engine asks the database for more of (`claims.more`), in order."""
    asked: list[int] = []
    more = claims.more

    def counted(config_id: int, handled: list[uuid.UUID]) -> list[Any]:
        asked.append(config_id)
        return more(config_id, handled)

    monkeypatch.setattr(claims, "more", counted)
    return asked


def test_a_queue_whose_task_nothing_woke_for_meanwhile_asks_for_no_more(
    caller: Caller, pusher: Agent, receiver: Receiver, asked: list[int]
) -> None:
    # The task's whole turn is one write: its claim holds every delivery, and no later commit
    # woke the engine for the task, so there is nothing more to ask the database for.
    caller.send("pusher", V1, push=webhook(V1, receiver.url))

    assert sequences_of(receiver.wait_for(EVENTS)) == [1, 2, 3, 4]
    assert asked == []


def test_a_wake_up_for_events_the_claim_already_loaded_asks_for_no_more(
    caller: Caller, pusher: Agent, asked: list[int]
) -> None:
    # Under load a task's one wake-up most often comes after another's claim took its
    # deliveries: it names the task's last event, which that claim loaded, so the engine has
    # nothing to ask for. A wake-up for a later event, or one that names none, asks.
    slow = HeldReceiver()
    try:
        task = caller.send("pusher", V1, push=webhook(V1, slow.url))
        slow.wait_for(1, accepted=False)  # the engine works the queue: one delivery in flight

        engine.wake(task["id"], EVENTS)  # what the send's own commit says
        time.sleep(3 * engine.COUNT_EVERY_SECONDS)
        slow.answer_all.set()
        assert sequences_of(slow.wait_for(EVENTS)) == [1, 2, 3, 4]
        assert eventually(lambda: engine.running() is not None and engine.running().idle)
        assert asked == []

        slow.answer_all.clear()
        second = caller.send("pusher", V1, push=webhook(V1, slow.url))
        slow.wait_for(EVENTS + 1, accepted=False)
        engine.wake(second["id"], EVENTS + 1)  # an event past those loaded: ask
        engine.wake(second["id"])  # a hub that names no event: ask
        slow.answer_all.set()
        assert eventually(lambda: engine.running() is not None and engine.running().idle)
    finally:
        slow.answer_all.set()
        slow.down()
    assert len(asked) == 1  # both wake-ups came while the first delivery was in flight


def test_a_wake_up_names_its_task_and_last_event_and_reads_the_bare_id_of_older_hubs() -> None:
    assert engine.woken_for(engine.wake_message("t-1", 7)) == ("t-1", 7)
    assert engine.woken_for(engine.wake_message("t-1", 0)) == ("t-1", 0)
    assert engine.woken_for("t-1") == ("t-1", 0)
    assert engine.woken_for("") == ("", 0)
    assert engine.woken_for("t-1 ٣") == ("t-1", 0)  # not a number we wrote: not known


def test_a_batch_of_successes_and_lost_attempts_is_written_whole(pusher: Agent) -> None:
    # Nearly every batch (on PostgreSQL, one statement): each attempt a row, a lost attempt and
    # its resend both counted, the queues released, a delivery deleted meanwhile skipped.
    task = open_task(pusher)
    sent, (first, second) = queue_of(task, "sent")
    taken_over, (resent,) = queue_of(task, "taken-over", events=1)
    deleted, (gone_meanwhile,) = queue_of(task, "deleted", events=1)
    now = timezone.now()
    later = now + timedelta(milliseconds=40)
    batch = [
        Outcome(first.id, sent.pk, outcomes.DELIVERED, now, 12, 200, excerpt="ok"),
        Outcome(second.id, sent.pk, outcomes.DELIVERED, later, 7, 204),
        Outcome(resent.id, taken_over.pk, outcomes.LOST, now, error=outcomes.LOST_ERROR),
        Outcome(resent.id, taken_over.pk, outcomes.DELIVERED, later, 3, 200),
        Outcome(gone_meanwhile.id, deleted.pk, outcomes.DELIVERED, now, 4, 200),
    ]
    gone_meanwhile.delete()

    outcomes.record(batch, [sent.pk, taken_over.pk, deleted.pk])

    rows = {d.pk: d for d in Delivery.objects.filter(config__task=task)}
    assert {(rows[d.pk].state, rows[d.pk].attempts) for d in (first, second)} == {
        (DeliveryState.DELIVERED, 1)
    }
    assert (rows[resent.pk].state, rows[resent.pk].attempts) == (DeliveryState.DELIVERED, 2)
    assert (rows[first.pk].delivered_at, rows[second.pk].delivered_at) == (now, later)
    assert rows[resent.pk].delivered_at == later and rows[resent.pk].last_error == ""
    made = DeliveryAttempt.objects.filter(delivery__config__task=task)
    assert {(str(a.delivery_id), a.status_code, a.duration_ms) for a in made} == {
        (str(first.id), 200, 12), (str(second.id), 204, 7), (str(resent.id), None, 0),
        (str(resent.id), 200, 3),
    }  # fmt: skip
    assert made.count() == 4
    assert made.get(delivery=first).response_excerpt == "ok"
    assert not PushNotificationConfig.objects.filter(lease_until__isnull=False).exists()
