"""Push deliveries (read, replayed as the admin replays them) and registrations (read,
revoked)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from agents.models import Agent, ApiKey
from push.models import Delivery, DeliveryState, PushNotificationConfig
from registry.models import Registration
from tests.factories.agents import make_agent
from tests.factories.push import stored_delivery
from tests.factories.tasks import ended, open_task
from tests.operators_api.conftest import Api
from tests.registry.conftest import CARD_V1, Registrar

pytestmark = pytest.mark.django_db


def test_deliveries_are_read_with_their_attempts_and_never_the_token(staff_api: Api) -> None:
    task = open_task(make_agent("hooked"), ended())
    delivery = stored_delivery(task, state=DeliveryState.ABANDONED)
    PushNotificationConfig.objects.filter(pk=delivery.config_id).update(
        token="receiver-secret-token", auth_credentials="basic-secret"
    )
    listed = staff_api.get(f"deliveries?task={task.id}")
    assert [d["id"] for d in listed.json()["results"]] == [str(delivery.id)]
    assert staff_api.get("deliveries?state=delivered").json()["results"] == []
    detail = staff_api.get(f"deliveries/{delivery.id}")
    assert detail.status_code == 200
    assert detail.json()["attempts_made"][0]["status_code"] == 500
    text = json.dumps(listed.json()) + json.dumps(detail.json())
    assert "receiver-secret-token" not in text and "basic-secret" not in text


def test_replay_queues_the_same_event_again(staff_api: Api) -> None:
    task = open_task(make_agent("hooked"), ended())
    delivery = stored_delivery(task, state=DeliveryState.ABANDONED)
    response = staff_api.post(f"deliveries/{delivery.id}/replay")
    assert response.status_code == 202, response.json()
    again = Delivery.objects.get(pk=response.json()["id"])
    assert again.pk != delivery.pk
    assert (again.config_id, again.event_id, again.sequence) == (
        delivery.config_id, delivery.event_id, delivery.sequence,
    )  # fmt: skip
    assert again.state == DeliveryState.PENDING
    assert Delivery.objects.get(pk=delivery.pk).state == DeliveryState.ABANDONED


def test_registrations_are_read_and_revoked(staff_api: Api, developer: User) -> None:
    registrar = Registrar(Client(), ApiKey.issue("agent", owner=developer, scopes=["registry"])[1])
    assert registrar.register(CARD_V1).status_code == 201
    listed = staff_api.get("registrations").json()["results"]
    assert [(r["agent"], r["expired"]) for r in listed] == [("translator", False)]
    registration_id = listed[0]["registration_id"]
    assert staff_api.get(f"registrations/{registration_id}").json()["agent"] == "translator"

    assert staff_api.post(f"registrations/{registration_id}/revoke").status_code == 204
    assert not Registration.objects.exists()
    assert not Agent.objects.filter(slug="translator").exists()
    assert registrar.get("translator").status_code == 404
