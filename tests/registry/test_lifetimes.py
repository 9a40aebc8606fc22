"""Lifetimes: an expired registration leaves search and the catalog, its A2A doors answer an
error naming the expiry, a heartbeat brings it back, and the sweep purges it after the grace
period. A card registered by URL is re-read on heartbeat only when its ETag changed."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from agents.models import Agent
from registry.jobs import sweep_registrations
from registry.models import Health, Registration
from tests.door_client import Door
from tests.registry.catalogs import agent_entries
from tests.registry.conftest import CARD_V1, CardServer, Registrar

pytestmark = pytest.mark.django_db


@pytest.fixture
def expired(owner: Registrar) -> Registration:
    """A registration whose TTL ran out, swept as the periodic job does."""
    assert owner.register(CARD_V1).status_code == 201
    Registration.objects.update(expires_at=timezone.now() - timedelta(seconds=5))
    assert sweep_registrations() == {"expired": 1, "purged": 0}
    return Registration.objects.get()


def send(client: Door, slug: str, version: str = "") -> Any:
    body = {"jsonrpc": "2.0", "id": 7, "method": "SendMessage" if version else "message/send",
            "params": {"message": {"role": "ROLE_USER" if version else "user", "messageId": "m1",
                                   "parts": [{"text": "hi"}] if version
                                   else [{"kind": "text", "text": "hi"}]}}}  # fmt: skip
    headers = {"HTTP_A2A_VERSION": version} if version else {}
    return client.post(f"/agents/{slug}/jsonrpc/", json.dumps(body),
                       content_type="application/json", **headers)  # fmt: skip


def test_an_expired_registration_leaves_search(expired: Registration, anonymous: Registrar) -> None:
    assert anonymous.search().json()["agents"] == []


def test_an_expired_registration_leaves_the_catalog(expired: Registration, client: Client) -> None:
    assert agent_entries(client.get("/.well-known/ai-catalog.json").json()) == []


def test_an_expired_registration_leaves_the_catalog_before_the_sweep(
    owner: Registrar, client: Client
) -> None:
    owner.register(CARD_V1)
    Registration.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert agent_entries(client.get("/.well-known/ai-catalog.json").json()) == []


@pytest.mark.parametrize("version", ["", "1.0"])
def test_json_rpc_calls_get_an_error_naming_the_expiry(
    expired: Registration, door: Door, version: str
) -> None:
    answer = send(door, "translator", version)
    assert answer.status_code == 200
    error = answer.json()["error"]
    assert answer.json()["id"] == 7
    assert error["code"] == -32004
    assert "registration of agent 'translator' expired at" in error["message"]


def test_rest_calls_get_an_error_naming_the_expiry(expired: Registration, door: Door) -> None:
    answer = door.get("/agents/translator/rest/tasks/nope", HTTP_A2A_VERSION="1.0")
    assert answer.status_code == 400
    assert "expired at" in answer.json()["error"]["message"]


def test_the_card_answers_404_naming_the_expiry(expired: Registration, client: Client) -> None:
    answer = client.get("/agents/translator/.well-known/agent-card.json")
    assert answer.status_code == 404 and "expired at" in answer.json()["error"]["message"]


def test_others_reading_it_get_410_and_its_owner_sees_it_expired(
    expired: Registration, rival: Registrar, owner: Registrar
) -> None:
    assert rival.get("translator").status_code == 410
    mine = owner.get("translator")
    assert mine.status_code == 200 and mine.json()["status"] == "expired"


def test_a_heartbeat_brings_it_back(
    expired: Registration, owner: Registrar, client: Client
) -> None:
    renewed = owner.heartbeat("translator")
    assert renewed.status_code == 200 and renewed.json()["status"] == "registered"
    listed = agent_entries(client.get("/.well-known/ai-catalog.json").json())
    assert [e["identifier"] for e in listed] == ["urn:a2a-hub:testserver:agent:translator"]
    assert [a["agentId"] for a in owner.search().json()["agents"]] == ["translator"]
    assert client.get("/agents/translator/.well-known/agent-card.json").status_code == 200


def test_the_sweep_purges_it_after_the_grace_period(expired: Registration, settings: Any) -> None:
    settings.REGISTRY_PURGE_AFTER_SECONDS = 60
    assert sweep_registrations() == {"expired": 0, "purged": 0}
    Registration.objects.update(expires_at=timezone.now() - timedelta(seconds=61))
    assert sweep_registrations() == {"expired": 0, "purged": 1}
    assert not Agent.objects.filter(slug="translator").exists()


def test_a_heartbeat_rereads_the_card_only_when_its_etag_changed(
    owner: Registrar, card_server: CardServer
) -> None:
    owner.register({"cardUrl": card_server.url})
    owner.heartbeat("translator")
    assert card_server.reads == ["", card_server.etag]  # unchanged: 304
    assert Agent.objects.get(slug="translator").version == "2.0.0"
    card_server.document["version"] = "2.1.0"
    card_server.document["skills"][0]["name"] = "Translate well"
    assert owner.heartbeat("translator").json()["health"] == Health.OK
    agent = Agent.objects.get(slug="translator")
    assert agent.version == "2.1.0"
    assert [s.name for s in agent.skills.all()] == ["Translate well"]
    assert Registration.objects.get().card_etag == '"v-2.1.0"'


def test_a_card_that_stopped_answering_is_shown_as_failing(
    owner: Registrar, card_server: CardServer
) -> None:
    owner.register({"cardUrl": card_server.url})
    card_server.server.shutdown()
    card_server.server.server_close()
    assert owner.heartbeat("translator").json()["health"] == Health.FAILING
    assert Registration.objects.get().last_error
