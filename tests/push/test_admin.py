"""The push admin as an operator uses it: configs without their secrets, a health filter that
finds failing and disabled webhooks, a one-off test delivery, and replaying deliveries."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from agents.models import Agent
from push.models import Delivery, DeliveryAttempt, DeliveryState, PushNotificationConfig
from tasks.models import Task
from tests.factories.push import CREDENTIALS, TOKEN, webhook
from tests.factories.versions import V1
from tests.helpers import eventually
from tests.push.callers import Caller, deliveries_of
from tests.push.receiver import Behaviour, Receiver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("push_settings")]

CONFIGS = "admin:push_pushnotificationconfig_changelist"
DELIVERIES = "admin:push_delivery_changelist"


def act(client: Client, changelist: str, action: str, rows: list[Any]) -> Any:
    return client.post(
        reverse(changelist),
        {"action": action, "_selected_action": [str(row.pk) for row in rows]},
        follow=True,
    )


def config_for(task: Task, name: str, url: str = "https://receiver.example.com/hook",
               **fields: Any) -> PushNotificationConfig:  # fmt: skip
    defaults = {"token": TOKEN, "auth_scheme": "Bearer", "auth_credentials": CREDENTIALS,
                "protocol_version": V1}  # fmt: skip
    return PushNotificationConfig.objects.create(
        task=task, config_id=name, url=url, **(defaults | fields)
    )


@pytest.fixture
def quiet_task(caller: Caller, pusher: Agent) -> Task:
    """A completed task that had no webhook: configs added to it directly are never kicked."""
    return Task.objects.get(id=caller.send("pusher", V1)["id"])


def test_the_config_pages_never_show_the_secrets(operator_client: Client, quiet_task: Task) -> None:
    config = config_for(quiet_task, "secretive")

    pages = [
        operator_client.get(reverse(CONFIGS)),
        operator_client.get(reverse("admin:push_pushnotificationconfig_change", args=[config.pk])),
    ]

    for page in pages:
        assert page.status_code == 200
        assert TOKEN not in page.content.decode()
        assert CREDENTIALS not in page.content.decode()
    assert "notification token set" in pages[1].content.decode()
    assert "Bearer credentials set" in pages[1].content.decode()


def test_a_signed_in_user_without_staff_rights_is_refused(developer: Any, quiet_task: Task) -> None:
    client = Client()
    client.force_login(developer)

    response = client.get(reverse(CONFIGS))

    assert response.status_code == 302
    assert "login" in response["Location"]
    assert response["Location"] == f"{reverse('admin:login')}?next={reverse(CONFIGS)}"


def test_the_health_filter_finds_failing_and_disabled_configs(
    operator_client: Client, quiet_task: Task
) -> None:
    event = quiet_task.events.order_by("sequence").first()
    assert event is not None
    failing = config_for(quiet_task, "failing", last_error="HTTP 500")
    Delivery.objects.create(config=failing, event=event, sequence=event.sequence, attempts=2,
                            next_attempt_at=timezone.now() + timedelta(hours=1))  # fmt: skip
    waiting = config_for(quiet_task, "waiting")
    Delivery.objects.create(config=waiting, event=event, sequence=event.sequence,
                            next_attempt_at=timezone.now() + timedelta(hours=1))  # fmt: skip
    config_for(quiet_task, "gone", active=False, disabled_reason="the receiver answered 410 Gone")
    config_for(quiet_task, "healthy")

    def listed(health: str) -> list[str]:
        page = operator_client.get(reverse(CONFIGS), {"health": health})
        assert page.status_code == 200
        return sorted(c.config_id for c in page.context["cl"].result_list)

    assert listed("failing") == ["failing"]
    assert listed("disabled") == ["gone"]


def test_a_test_delivery_sends_the_latest_event_once_without_retries(
    operator_client: Client, quiet_task: Task
) -> None:
    receiver = Receiver(Behaviour(fail_first=1000, fail_status=500))
    try:
        config = config_for(quiet_task, "probe", url=receiver.url)
        act(operator_client, CONFIGS, "send_test_delivery", [config])
        (request,) = receiver.wait_for(1, accepted=False)
        assert receiver.stays_at(1, 0.5), "a test delivery was retried"
    finally:
        receiver.down()

    assert request.json()["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert request.header("X-A2A-Notification-Token") == TOKEN
    (probe,) = Delivery.objects.filter(config=config, test=True)
    assert eventually(lambda: Delivery.objects.get(pk=probe.pk).state == DeliveryState.ABANDONED)
    assert [a.status_code for a in DeliveryAttempt.objects.filter(delivery=probe)] == [500]


def test_replay_delivers_the_same_events_again(
    operator_client: Client, caller: Caller, pusher: Agent, receiver: Receiver
) -> None:
    task = caller.send("pusher", V1, push=webhook(V1, receiver.url))
    first = receiver.wait_for(4)
    assert eventually(
        lambda: all(d.state == DeliveryState.DELIVERED for d in deliveries_of(task["id"]))
    )
    originals = deliveries_of(task["id"])[1:3]

    page = act(operator_client, DELIVERIES, "replay", originals)

    assert "2 deliveries queued again" in page.content.decode()
    again = receiver.wait_for(6)[4:]
    assert [r.body for r in again] == [r.body for r in first[1:3]]
    assert {r.header("webhook-id") for r in again}.isdisjoint(r.header("webhook-id") for r in first)
    assert eventually(
        lambda: [d.state for d in deliveries_of(task["id"])] == [DeliveryState.DELIVERED] * 6
    )


def test_a_delivery_page_shows_every_attempt(
    operator_client: Client, caller: Caller, pusher: Agent
) -> None:
    receiver = Receiver(Behaviour(fail_first=2, fail_status=503))
    try:
        task = caller.send("pusher", V1, push=webhook(V1, receiver.url))
        receiver.wait_for(4)
    finally:
        receiver.down()
    first = deliveries_of(task["id"])[0]

    page = operator_client.get(reverse("admin:push_delivery_change", args=[first.pk]))

    assert page.status_code == 200
    assert page.content.decode().count("503") >= 2
    assert TOKEN not in page.content.decode() and CREDENTIALS not in page.content.decode()


def test_enabling_a_disabled_config_lets_it_receive_again(
    operator_client: Client, quiet_task: Task
) -> None:
    config = config_for(quiet_task, "gone", active=False, disabled_reason="410")

    act(operator_client, CONFIGS, "enable_configs", [config])

    config.refresh_from_db()
    assert config.active and not config.disabled_reason
