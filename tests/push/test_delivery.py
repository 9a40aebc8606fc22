"""Delivery as a webhook receiver sees it: every event of a task, in order, once accepted, with
the config's credentials and the version's body; failures are retried with backoff (and the
receiver's Retry-After), every attempt is logged, 410 turns the config off, and a delivery that
cannot succeed within the retry horizon is given up."""

from __future__ import annotations

import email.utils
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from agents.models import Agent
from push.delivery import RETRY, Result, next_attempt, parse_retry_after
from push.models import DeliveryAttempt, DeliveryState, PushNotificationConfig
from tasks.models import Task
from tests.factories.push import (
    CREDENTIALS,
    TOKEN,
    create_params,
    send_params,
    stored_delivery,
    webhook,
)
from tests.factories.tasks import open_task
from tests.factories.versions import V03, V1, VERSIONS
from tests.helpers import eventually
from tests.push.callers import Caller, deliveries_of, sequences_of
from tests.push.receiver import Behaviour, Receiver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("push_settings")]

EVENTS = 4  # the echo agent's task: submitted, working, its artifact, completed
V1_KINDS = ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]


def states_of(requests: list[Any]) -> list[str]:
    """The state each 1.0 status event carried (the Task event's too), in arrival order."""
    states = []
    for request in requests:
        body = request.json()
        event = body.get("task") or body.get("statusUpdate")
        if event is not None:
            states.append(event["status"]["state"])
    return states


@pytest.mark.parametrize("version", VERSIONS)
def test_every_event_arrives_in_order_with_the_configs_credentials(
    caller: Caller, pusher: Agent, receiver: Receiver, version: str
) -> None:
    task = caller.send("pusher", version, push=webhook(version, receiver.url))

    got = receiver.wait_for(EVENTS)

    assert receiver.stays_at(EVENTS), "more deliveries than events"
    assert sequences_of(got) == [1, 2, 3, 4]
    assert len({r.header("webhook-id") for r in got}) == EVENTS
    for request in got:
        assert request.path == "/webhook"
        assert request.header("Authorization") == f"Bearer {CREDENTIALS}"
        assert request.header("X-A2A-Notification-Token") == TOKEN
        assert request.header("A2A-Push-Signature").count(".") == 2
    assert all(d.state == DeliveryState.DELIVERED for d in deliveries_of(task["id"]))


def test_a_receiver_answering_200_with_a_long_body_gets_each_event_once(
    caller: Caller, pusher: Agent
) -> None:
    long = Receiver(Behaviour(answer_body=b"{" * 5_000_000))  # past any response limit
    try:
        task = caller.send("pusher", V1, push=webhook(V1, long.url))
        got = long.wait_for(EVENTS)
        assert long.stays_at(EVENTS), "an event was sent again"
    finally:
        long.down()

    assert sequences_of(got) == [1, 2, 3, 4]
    assert all(d.state == DeliveryState.DELIVERED for d in deliveries_of(task["id"]))


def test_a_1_0_receiver_gets_each_event_as_a_stream_response(
    caller: Caller, pusher: Agent, receiver: Receiver
) -> None:
    task = caller.send("pusher", V1, "ahoy", push=webhook(V1, receiver.url))

    got = receiver.wait_for(EVENTS)

    assert {r.header("Content-Type") for r in got} == {"application/a2a+json"}
    bodies = [r.json() for r in got]
    assert [next(iter(b)) for b in bodies] == V1_KINDS
    assert all(len(b) == 1 for b in bodies), "a StreamResponse has exactly one member"
    assert states_of(got) == ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    assert bodies[0]["task"]["id"] == task["id"]
    assert bodies[2]["artifactUpdate"]["artifact"]["parts"] == [{"text": "ahoy"}]
    assert all(
        b.get("statusUpdate", {"taskId": task["id"]})["taskId"] == task["id"] for b in bodies
    )


def test_a_0_3_receiver_gets_the_task_with_kind_task(
    caller: Caller, pusher: Agent, receiver: Receiver
) -> None:
    task = caller.send("pusher", V03, "ahoy", push=webhook(V03, receiver.url))

    got = receiver.wait_for(EVENTS)

    assert {r.header("Content-Type") for r in got} == {"application/json"}
    for body in (r.json() for r in got):
        assert body["kind"] == "task"
        assert body["id"] == task["id"]
        assert body["status"]["state"] in {"submitted", "working", "completed"}
    assert got[-1].json()["status"]["state"] == "completed"
    assert got[-1].json()["artifacts"][0]["parts"] == [{"kind": "text", "text": "ahoy"}]


def test_a_config_without_token_or_credentials_sends_neither_header(
    caller: Caller, pusher: Agent, receiver: Receiver
) -> None:
    caller.send("pusher", V1, push={"url": receiver.url})

    got = receiver.wait_for(EVENTS)

    assert not any(r.header("Authorization") for r in got)
    assert not any(r.header("X-A2A-Notification-Token") for r in got)


def test_a_config_created_later_hears_only_the_events_after_it(
    caller: Caller, pusher: Agent, receiver: Receiver
) -> None:
    pusher.executor_kind = "interview"
    pusher.save()
    task = caller.send("pusher", V1, "Hi")  # the interviewer asks for a name: input-required
    caller.result(
        "pusher", V1, "create_config", {"taskId": task["id"], **webhook(V1, receiver.url)}
    )
    before = Task.objects.get(id=task["id"]).last_sequence

    answer = {"messageId": "msg-name", "role": "ROLE_USER", "parts": [{"text": "Ada"}],
              "taskId": task["id"]}  # fmt: skip
    caller.result("pusher", V1, "send", {"message": answer})

    after = Task.objects.get(id=task["id"]).last_sequence
    got = receiver.wait_for(after - before)
    assert sequences_of(got) == list(range(before + 1, after + 1))
    assert states_of(got)[-1] == "TASK_STATE_COMPLETED"
    assert receiver.stays_at(after - before, 0.3)


def follow_up(task: dict[str, Any], version: str, text: str) -> dict[str, Any]:
    """The message answering the interviewer's question, in `version`'s shape."""
    if version == V1:
        return {"messageId": f"msg-{text}", "role": "ROLE_USER", "parts": [{"text": text}],
                "taskId": task["id"], "contextId": task["contextId"]}  # fmt: skip
    return {"kind": "message", "messageId": f"msg-{text}", "role": "user",
            "parts": [{"kind": "text", "text": text}], "taskId": task["id"],
            "contextId": task["contextId"]}  # fmt: skip


def assert_in_version(got: list[Any], version: str, task_id: str) -> None:
    """Each request is in `version`'s wire format: 1.0 StreamResponses, 0.3 Tasks."""
    if version == V1:
        assert {r.header("Content-Type") for r in got} == {"application/a2a+json"}
        assert all(len(r.json()) == 1 and "kind" not in r.json() for r in got)
    else:
        assert {r.header("Content-Type") for r in got} == {"application/json"}
        assert all(r.json()["kind"] == "task" and r.json()["id"] == task_id for r in got)


@pytest.mark.parametrize(("made_in", "set_in"), [(V1, V03), (V03, V1)])
def test_a_config_is_delivered_in_the_version_that_created_it_not_the_tasks(
    caller: Caller, pusher: Agent, receiver: Receiver, made_in: str, set_in: str
) -> None:
    # PROTOCOL.md 5: "in the wire format of the version that created the config". Deliveries
    # spoke the task's version: a 0.3 receiver got StreamResponses it cannot read.
    pusher.executor_kind = "interview"
    pusher.save()
    task = caller.send("pusher", made_in, "Hi")  # input-required: the interviewer asks
    caller.result("pusher", set_in, "create_config",
                  create_params(set_in, task["id"], webhook(set_in, receiver.url)))  # fmt: skip

    caller.result("pusher", made_in, "send", {"message": follow_up(task, made_in, "Ada")})

    got = receiver.wait_for(2)  # working, completed (and the answer's artifact)
    assert_in_version(got, set_in, task["id"])


@pytest.mark.parametrize(("made_in", "given_in"), [(V1, V03), (V03, V1)])
def test_a_config_sent_with_a_follow_up_is_delivered_in_the_follow_ups_version(
    caller: Caller, pusher: Agent, receiver: Receiver, made_in: str, given_in: str
) -> None:
    pusher.executor_kind = "interview"
    pusher.save()
    task = caller.send("pusher", made_in, "Hi")
    params = send_params(given_in, "Ada", webhook(given_in, receiver.url))
    params["message"] = follow_up(task, given_in, "Ada")

    caller.result("pusher", given_in, "send", params)

    got = receiver.wait_for(2)
    assert_in_version(got, given_in, task["id"])


@pytest.mark.parametrize("version", VERSIONS)
def test_a_receiver_that_fails_at_first_still_gets_everything_in_order(
    caller: Caller, pusher: Agent, version: str
) -> None:
    receiver = Receiver(Behaviour(fail_first=3, fail_status=500))
    try:
        task = caller.send("pusher", version, push=webhook(version, receiver.url))
        got = receiver.wait_for(EVENTS)
    finally:
        receiver.down()

    assert sequences_of(got) == [1, 2, 3, 4]
    assert [r.status for r in receiver.requests] == [500, 500, 500, 200, 200, 200, 200]
    # The three failures were all the first event's: a queue never skips ahead.
    assert len({r.header("webhook-id") for r in receiver.requests[:4]}) == 1
    # Outcomes are written in batches, just after the answers that decide them.
    assert eventually(lambda: all(d.state == DeliveryState.DELIVERED
                                  for d in deliveries_of(task["id"])))  # fmt: skip
    first, *rest = deliveries_of(task["id"])
    attempts = DeliveryAttempt.objects.filter(delivery=first).order_by("started_at")
    assert [a.status_code for a in attempts] == [500, 500, 500, 200]
    assert first.attempts == 4 and first.state == DeliveryState.DELIVERED
    assert [d.attempts for d in rest] == [1, 1, 1]


def test_retry_after_is_honoured(caller: Caller, pusher: Agent, settings: Any) -> None:
    settings.PUSH_RETRY_MAX_SECONDS = 5.0
    receiver = Receiver(Behaviour(fail_first=1, fail_status=503, fail_headers={"Retry-After": "1"}))
    try:
        caller.send("pusher", V1, push=webhook(V1, receiver.url))
        receiver.wait_for(EVENTS)
    finally:
        receiver.down()

    first, second = receiver.requests[:2]
    assert first.header("webhook-id") == second.header("webhook-id")
    # Without Retry-After the retry would come after about PUSH_RETRY_BASE_SECONDS (0.05 s).
    assert second.at - first.at >= 0.95


@pytest.mark.parametrize("value", ["²", "١٢", "9" * 5000, "-1", "soon"])
def test_a_retry_after_that_is_no_number_of_seconds_nor_a_date_is_ignored(value: str) -> None:
    # The receiver's header is hostile input: the retry falls back to the schedule.
    assert parse_retry_after(value) is None


def test_a_retry_after_in_seconds_or_as_a_date_is_read() -> None:
    assert parse_retry_after(" 120 ") == 120.0
    assert (
        0
        < parse_retry_after(email.utils.format_datetime(timezone.now() + timedelta(minutes=1)))
        <= 60
    )


def test_retries_stay_at_the_cap_after_thousands_of_failures(pusher: Agent, settings: Any) -> None:
    # A long outage with a low cap: tries a minute apart for days.
    settings.PUSH_RETRY_MAX_SECONDS = 60.0
    settings.PUSH_RETRY_HORIZON_SECONDS = 30 * 86400.0
    delivery = stored_delivery(open_task(pusher), DeliveryState.PENDING)
    delivery.attempts = 5000
    before = timezone.now()

    retry_at = next_attempt(delivery, Result(RETRY, 503, error="HTTP 503"))

    assert retry_at is not None
    assert timedelta(seconds=30) <= retry_at - before <= timedelta(seconds=90)


def test_a_receiver_that_is_down_for_a_while_gets_everything_when_it_comes_back(
    caller: Caller, pusher: Agent, receiver: Receiver
) -> None:
    receiver.down()
    task = caller.send("pusher", V1, push=webhook(V1, receiver.url))
    # Two finished attempts, not the counter: it counts an attempt from its start, and one
    # still under way when the receiver comes back may well succeed.
    first = deliveries_of(task["id"])[0]
    failed = DeliveryAttempt.objects.filter(delivery=first, status_code__isnull=True)
    assert eventually(lambda: failed.count() >= 2)

    receiver.up()
    got = receiver.wait_for(EVENTS)

    assert sequences_of(got) == [1, 2, 3, 4]
    assert failed.count() >= 2 and all(a.error for a in failed)


def test_a_410_answer_disables_the_config_and_stops_deliveries(
    caller: Caller, pusher: Agent
) -> None:
    receiver = Receiver(Behaviour(status=410))
    try:
        task = caller.send("pusher", V1, push=webhook(V1, receiver.url))
        receiver.wait_for(1, accepted=False)
        assert receiver.stays_at(1), "a gone receiver got more deliveries"
    finally:
        receiver.down()

    config = PushNotificationConfig.objects.get(task_id=task["id"])
    assert not config.active
    assert "410" in config.disabled_reason
    assert eventually(
        lambda: {d.state for d in deliveries_of(task["id"])} == {DeliveryState.ABANDONED}
    )
    listed = caller.result("pusher", V1, "list_configs", {"taskId": task["id"]})
    assert [c["url"] for c in listed["configs"]] == [receiver.url]


def test_a_delivery_past_the_retry_horizon_is_abandoned(
    caller: Caller, pusher: Agent, settings: Any
) -> None:
    settings.PUSH_RETRY_HORIZON_SECONDS = 0.3
    receiver = Receiver(Behaviour(fail_first=1000, fail_status=500))
    try:
        task = caller.send("pusher", V1, push=webhook(V1, receiver.url))
        assert eventually(
            lambda: {d.state for d in deliveries_of(task["id"])} == {DeliveryState.ABANDONED}
        )
        tries = len(receiver.requests)
        assert receiver.stays_at(tries, 0.5), "an abandoned delivery was tried again"
    finally:
        receiver.down()

    for item in deliveries_of(task["id"]):
        assert item.attempts >= 1
        assert item.last_error == "HTTP 500"
        assert item.delivered_at is None
    assert not DeliveryAttempt.objects.exclude(status_code=500).exists()
