"""Only the registering principal (or another key of its user, or an operator) may renew,
change or remove a registration."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from agents.models import Agent, ApiKey
from registry.models import Registration
from tests.registry.conftest import CARD_V1, Registrar, card

pytestmark = pytest.mark.django_db


@pytest.fixture
def registered(owner: Registrar) -> Registration:
    assert owner.register(CARD_V1).status_code == 201
    return Registration.objects.get()


def test_another_principal_cannot_renew_it(registered: Registration, rival: Registrar) -> None:
    response = rival.heartbeat("translator")
    assert response.status_code == 403
    registered.refresh_from_db()
    assert Registration.objects.get().renewed_at == registered.renewed_at


def test_another_principal_cannot_change_it(registered: Registration, rival: Registrar) -> None:
    response = rival.put("translator", card(CARD_V1, name="Hijacked"))
    assert response.status_code == 403
    assert Agent.objects.get(slug="translator").name == "Translator"


def test_another_principal_cannot_delete_it(registered: Registration, rival: Registrar) -> None:
    assert rival.delete("translator").status_code == 403
    assert Agent.objects.filter(slug="translator").exists()


def test_another_principal_cannot_take_the_slug_by_registering_again(
    registered: Registration, rival: Registrar
) -> None:
    response = rival.register(card(CARD_V1, description="Mine now."))
    assert response.status_code == 403
    assert Agent.objects.get(slug="translator").description == "Translates short texts."


def test_the_owner_registering_again_updates_the_same_registration(
    registered: Registration, owner: Registrar
) -> None:
    response = owner.register(card(CARD_V1, description="Better now."))
    assert response.status_code == 200
    assert response.json()["registrationId"] == registered.registration_id
    assert Agent.objects.get(slug="translator").description == "Better now."


def test_the_owner_changes_the_card_with_put(registered: Registration, owner: Registrar) -> None:
    response = owner.put("translator", card(CARD_V1, version="3.0.0"))
    assert response.status_code == 200
    assert Agent.objects.get(slug="translator").version == "3.0.0"


def test_another_key_of_the_same_user_may_renew(registered: Registration, developer: User) -> None:
    _, second = ApiKey.issue("second key", owner=developer, scopes=["registry"])
    assert Registrar(Client(), second).heartbeat("translator").status_code == 200


def test_an_operator_may_remove_anyones_registration(
    registered: Registration, operator_client: Client
) -> None:
    assert Registrar(operator_client).delete("translator").status_code == 204
    assert not Agent.objects.filter(slug="translator").exists()


def test_the_owner_deregisters_and_the_agent_is_gone(
    registered: Registration, owner: Registrar, client: Client
) -> None:
    assert owner.delete("translator").status_code == 204
    assert client.get("/agents/translator/.well-known/agent-card.json").status_code == 404
    assert owner.get("translator").status_code == 404


def test_a_keys_last_use_is_written_once_a_minute_not_on_every_call(
    owner: Registrar, registered: Registration, developer: User
) -> None:
    key = ApiKey.objects.get(owner=developer)
    first = key.last_used_at
    assert first is not None  # the registration was a use

    with CaptureQueriesContext(connection) as queries:
        assert owner.heartbeat(registered.agent.slug).status_code == 200
    updates_of_keys = [q for q in queries.captured_queries
                       if q["sql"].startswith("UPDATE") and "apikey" in q["sql"]]  # fmt: skip
    assert updates_of_keys == []
    key.refresh_from_db()
    assert key.last_used_at == first

    ApiKey.objects.filter(pk=key.pk).update(last_used_at=first - timedelta(minutes=5))
    assert owner.heartbeat(registered.agent.slug).status_code == 200
    key.refresh_from_db()
    assert key.last_used_at > first
