"""Push notification configs as each version spells them, the params of the config methods,
sends that carry a config inline, and stored deliveries (with an attempt) of a given age."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from push.models import Delivery, DeliveryAttempt, DeliveryState, PushNotificationConfig
from tasks.models import Task
from tests.factories.messages import wire_message
from tests.factories.versions import V1

TOKEN = "notification-token-7f3a"
CREDENTIALS = "receiver-credentials-91bc"


def webhook(
    version: str, url: str, token: str = TOKEN, credentials: str = CREDENTIALS, **fields: Any
) -> dict[str, Any]:
    """A push config as each version spells it (without its task), with a token and a Bearer
    credential."""
    if version == V1:
        auth: dict[str, Any] = {"scheme": "Bearer", "credentials": credentials}
    else:
        auth = {"schemes": ["Bearer"], "credentials": credentials}
    return {"url": url, "token": token, "authentication": auth} | fields


def create_params(version: str, task_id: str, config: dict[str, Any]) -> dict[str, Any]:
    if version == V1:
        return {"taskId": task_id, **config}
    return {"taskId": task_id, "pushNotificationConfig": config}


def named_params(version: str, task_id: str, config_id: str = "") -> dict[str, Any]:
    """Params naming a task (and one of its configs) for get, list and delete."""
    if version == V1:
        return {"taskId": task_id} | ({"id": config_id} if config_id else {})
    return {"id": task_id} | ({"pushNotificationConfigId": config_id} if config_id else {})


def send_params(version: str, text: str, push: dict[str, Any] | None) -> dict[str, Any]:
    """A blocking send's params, with `push` as its inline config when given."""
    message = wire_message(version, text)
    configuration: dict[str, Any]
    if version == V1:
        configuration = {"returnImmediately": False}
        if push is not None:
            configuration["taskPushNotificationConfig"] = push
    else:
        configuration = {"blocking": True}
        if push is not None:
            configuration["pushNotificationConfig"] = push
    return {"message": message, "configuration": configuration}


def stored_delivery(
    task: Task, state: str = DeliveryState.DELIVERED, days_ago: float = 0.0
) -> Delivery:
    """A delivery of the task's latest event to its config `hook` (made if need be), with one
    attempt, last due `days_ago` days ago; never sent anywhere."""
    config, _ = PushNotificationConfig.objects.get_or_create(
        task=task, config_id="hook",
        defaults={"url": "https://receiver.example.com/hook", "protocol_version": V1},
    )  # fmt: skip
    event = task.events.order_by("-sequence").first()
    assert event is not None, "the task has no event to deliver"
    due = timezone.now() - timedelta(days=days_ago)
    delivered = state == DeliveryState.DELIVERED
    delivery = Delivery.objects.create(
        config=config, event=event, sequence=event.sequence, state=state, attempts=1,
        next_attempt_at=due, delivered_at=due if delivered else None,
    )  # fmt: skip
    DeliveryAttempt.objects.create(
        delivery=delivery, started_at=due, status_code=200 if delivered else 500
    )
    return delivery
