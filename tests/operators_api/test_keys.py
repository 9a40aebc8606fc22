"""API keys: the secret is in the answer that creates the key and nowhere else, ever."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from agents.models import ApiKey
from tests.factories.agents import make_agent
from tests.operators_api.conftest import Api
from tests.registry.conftest import CARD_V1, Registrar

pytestmark = pytest.mark.django_db


def test_the_secret_is_shown_once_and_works(staff_api: Api, developer: User) -> None:
    created = staff_api.post("keys", {"name": "ci", "owner": developer.username})
    assert created.status_code == 201, created.json()
    secret = created.json()["secret"]
    assert secret.startswith("a2a_")
    key_id = created.json()["id"]

    # Afterwards, no answer carries it: not the key, not the list.
    for path in (f"keys/{key_id}", "keys"):
        text = json.dumps(staff_api.get(path).json())
        assert secret not in text
        # The random part after `a2a_<prefix>_` (which may itself hold underscores).
        assert secret.split("_", 2)[2] not in text
        assert "secret" not in text
    # It is a working key of its owner (the developer is no operator: refused here, but known).
    assert Api(Client(), secret).get("agents").status_code == 403


def test_a_key_bound_to_an_agent(staff_api: Api) -> None:
    make_agent("bound")
    created = staff_api.post("keys", {"name": "bound", "agent": "bound"})
    assert created.status_code == 201
    assert ApiKey.objects.get(pk=created.json()["id"]).agent.slug == "bound"
    assert staff_api.post("keys", {"name": "x", "agent": "nobody"}).json()["error"]["field"] == (
        "agent"
    )


def test_a_revoked_key_is_refused_at_once(staff_api: Api, operator: User) -> None:
    created = staff_api.post("keys", {"name": "short-lived", "owner": operator.username})
    other = Api(Client(), created.json()["secret"])
    assert other.get("agents").status_code == 200

    revoked = staff_api.post(f"keys/{created.json()['id']}/revoke")
    assert revoked.status_code == 200
    assert revoked.json()["active"] is False
    assert "secret" not in revoked.json()
    assert other.get("agents").status_code == 401


def test_a_key_needs_a_name(staff_api: Api) -> None:
    response = staff_api.post("keys", {})
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "name"
    assert not ApiKey.objects.exclude(name="operations script").exists()


def test_a_new_key_has_no_scopes_unless_chosen_and_the_registry_scope_lets_it_register(
    staff_api: Api, developer: User
) -> None:
    plain = staff_api.post("keys", {"name": "plain", "owner": developer.username})
    assert plain.json()["scopes"] == []
    chosen = staff_api.post(
        "keys", {"name": "registrar", "owner": developer.username, "scopes": ["registry"]}
    )
    assert chosen.status_code == 201
    assert chosen.json()["scopes"] == ["registry"]
    assert staff_api.get(f"keys/{chosen.json()['id']}").json()["scopes"] == ["registry"]
    assert Registrar(Client(), chosen.json()["secret"]).register(CARD_V1).status_code == 201
    assert Registrar(Client(), plain.json()["secret"]).register(CARD_V1).status_code == 403


def test_unknown_scopes_and_scopes_on_an_agents_key_are_refused_naming_the_field(
    staff_api: Api,
) -> None:
    make_agent("bound")
    unknown = staff_api.post("keys", {"name": "x", "scopes": ["root"]})
    assert unknown.status_code == 400
    assert unknown.json()["error"]["field"] == "scopes[0]"
    bound = staff_api.post("keys", {"name": "x", "agent": "bound", "scopes": ["registry"]})
    assert bound.status_code == 400
    assert bound.json()["error"]["field"] == "scopes"
    assert "cannot hold scopes" in bound.json()["error"]["message"]
    assert not ApiKey.objects.filter(name="x").exists()
