"""The API key admin: a key is shown once and stored as a hash; revoked keys stop working."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents.models import Agent, ApiKey, hash_key
from tests.door_client import Door
from tests.factories.agents import SECURED

pytestmark = pytest.mark.django_db

SEND = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "message/send",
    "params": {
        "message": {
            "kind": "message",
            "messageId": "m-1",
            "role": "user",
            "parts": [{"kind": "text", "text": "hello"}],
        }
    },
}


def send(client: Door, agent: Agent, key: str) -> Any:
    return client.post(
        f"/agents/{agent.slug}/jsonrpc/", SEND, content_type="application/json",
        headers={"X-API-Key": key},
    )  # fmt: skip


def secret_in(html: str) -> str | None:
    found = re.search(r'<code class="api-key-secret">([^<]+)</code>', html)
    return found.group(1) if found else None


def test_anonymous_and_non_staff_users_cannot_enter(client: Client, developer: Any) -> None:
    url, add = reverse("admin:agents_apikey_changelist"), reverse("admin:agents_apikey_add")
    assert client.get(url)["Location"].startswith(reverse("admin:login"))
    assert client.get(url)["Location"] == f"{reverse('admin:login')}?next={url}"
    client.force_login(developer)
    refused = client.get(url)
    assert refused.status_code == 302
    assert refused["Location"] == f"{reverse('admin:login')}?next={url}"
    posted = client.post(add, {"name": "x"})
    assert posted.status_code == 302
    assert posted["Location"] == f"{reverse('admin:login')}?next={add}"
    assert not ApiKey.objects.exists()


def test_a_new_key_is_shown_once_and_only_its_hash_is_stored(
    operator_client: Client, operator: Any, agent_factory: Any
) -> None:
    agent = agent_factory("keyed")
    response = operator_client.post(
        reverse("admin:agents_apikey_add"),
        {"name": "ci robot", "owner": operator.pk, "agent": agent.pk},
        follow=True,
    )
    secret = secret_in(response.content.decode())
    assert secret is not None and secret.startswith("a2a_")
    key = ApiKey.objects.get()
    assert (key.name, key.owner, key.agent) == ("ci robot", operator, agent)
    assert key.key_hash == hash_key(secret)
    for url in (
        reverse("admin:agents_apikey_changelist"),
        reverse("admin:agents_apikey_change", args=[key.pk]),
    ):
        page = operator_client.get(url).content.decode()
        assert secret not in page and key.key_hash not in page
        assert f"a2a_{key.prefix}_" in page


def test_editing_a_key_keeps_its_secret(operator_client: Client) -> None:
    key, secret = ApiKey.issue("old name")
    response = operator_client.post(
        reverse("admin:agents_apikey_change", args=[key.pk]),
        {"name": "new name", "owner": "", "agent": ""},
        follow=True,
    )
    assert secret_in(response.content.decode()) is None
    key.refresh_from_db()
    assert key.name == "new name" and key.key_hash == hash_key(secret)


def test_the_list_shows_prefix_owner_agent_and_status(
    operator_client: Client, operator: Any, agent_factory: Any
) -> None:
    active, _ = ApiKey.issue("active key", operator, agent_factory("scoped"))
    revoked, _ = ApiKey.issue("revoked key")
    operator_client.post(
        reverse("admin:agents_apikey_changelist"),
        {"action": "revoke_keys", "_selected_action": [revoked.pk]},
    )
    url = reverse("admin:agents_apikey_changelist")
    page = operator_client.get(url).content.decode()
    assert active.prefix in page and "scoped" in page and "op" in page
    listed = operator_client.get(url, {"revoked": "yes"}).context["cl"].result_list
    assert list(listed) == [revoked]


def test_a_revoked_key_no_longer_authenticates(
    door: Door, operator_client: Client, agent_factory: Any
) -> None:
    agent = agent_factory("guarded", **SECURED)
    key, secret = ApiKey.issue("client", agent=agent)
    accepted = send(door, agent, secret)
    assert accepted.status_code == 200
    assert "result" in accepted.json()
    response = operator_client.post(
        reverse("admin:agents_apikey_changelist"),
        {"action": "revoke_keys", "_selected_action": [key.pk]},
        follow=True,
    )
    assert "1 key(s) revoked." in [str(m) for m in response.context["messages"]]
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert send(door, agent, secret).status_code == 401


def test_the_key_form_sets_scopes_and_the_list_shows_them(operator_client: Client) -> None:
    form = operator_client.get(reverse("admin:agents_apikey_add")).content.decode()
    assert 'name="scopes" value="registry"' in form
    operator_client.post(
        reverse("admin:agents_apikey_add"), {"name": "registrar", "scopes": ["registry"]}
    )
    operator_client.post(reverse("admin:agents_apikey_add"), {"name": "plain"})
    assert ApiKey.objects.get(name="registrar").scopes == ["registry"]
    assert ApiKey.objects.get(name="plain").scopes == []
    listed = operator_client.get(reverse("admin:agents_apikey_changelist")).content.decode()
    assert '<td class="field-scope_list">registry</td>' in listed


def test_a_key_bound_to_an_agent_cannot_hold_scopes(
    operator_client: Client, agent_factory: Any
) -> None:
    agent = agent_factory("bound")
    response = operator_client.post(
        reverse("admin:agents_apikey_add"),
        {"name": "bound", "agent": agent.pk, "scopes": ["registry"]},
    )
    assert response.status_code == 200  # the form again, with the error
    assert "cannot hold scopes" in response.content.decode()
    assert not ApiKey.objects.exists()
