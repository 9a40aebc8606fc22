"""Who may register: a hub-wide key or an OAuth2 access token of the hub holding the `registry`
scope (or a signed-in session). A valid credential without it gets 403 with RFC 6750's
`insufficient_scope` challenge; an expired, revoked or unknown token 401. A registration made
by a token belongs to the token's principal."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import AccessToken

from agents.models import Agent, ApiKey
from registry.models import Registration
from tests.factories.oauth import machine, token_for, user_token
from tests.registry.conftest import CARD_V1, Registrar, card

pytestmark = pytest.mark.django_db

# RFC 9728: the challenge names the hub's protected-resource metadata (its authorization server).
METADATA = 'resource_metadata="http://testserver/.well-known/oauth-protected-resource"'
SCOPE_CHALLENGE = (
    f'Bearer realm="a2a-hub", error="insufficient_scope", scope="registry", {METADATA}'
)


def app_registrar(scope: str, name: str = "robot") -> tuple[Registrar, int]:
    app, secret = machine(name)
    return Registrar(Client(), token_for(app, secret, scope=scope)["access_token"]), app.pk


def test_a_hub_wide_key_without_the_registry_scope_gets_403_naming_it(developer: User) -> None:
    _, raw = ApiKey.issue("calls agents only", owner=developer)
    response = Registrar(Client(), raw).register(CARD_V1)
    assert response.status_code == 403
    assert response["WWW-Authenticate"] == SCOPE_CHALLENGE
    assert "'registry' scope" in response.json()["error"]["message"]
    assert not Agent.objects.filter(slug="translator").exists()


def test_a_key_without_the_scope_cannot_renew_its_users_registration(
    owner: Registrar, developer: User
) -> None:
    assert owner.register(CARD_V1).status_code == 201
    _, plain = ApiKey.issue("calls agents only", owner=developer)
    response = Registrar(Client(), plain).heartbeat("translator")
    assert response.status_code == 403
    assert response["WWW-Authenticate"] == SCOPE_CHALLENGE


def test_an_applications_token_with_the_scope_registers_renews_and_deregisters() -> None:
    registrar, app_id = app_registrar("registry")
    created = registrar.register(CARD_V1)
    assert created.status_code == 201, created.content
    registration = Registration.objects.get()
    assert registration.owner_principal == f"app:{app_id}"
    assert registration.owner is None
    assert registrar.heartbeat("translator").status_code == 200
    assert registrar.get("translator").json()["health"] == "unknown"  # its owner's details
    assert registrar.delete("translator").status_code == 204
    assert not Agent.objects.filter(slug="translator").exists()


def test_a_token_without_the_scope_gets_403_with_an_insufficient_scope_challenge() -> None:
    registrar, _ = app_registrar("a2a:invoke")
    response = registrar.register(CARD_V1)
    assert response.status_code == 403
    assert response["WWW-Authenticate"] == SCOPE_CHALLENGE
    assert response.json()["error"]["status"] == "PERMISSION_DENIED"
    assert not Registration.objects.exists()


def test_another_applications_token_cannot_touch_the_registration() -> None:
    owner, _ = app_registrar("registry", "owner app")
    rival, _ = app_registrar("registry", "rival app")
    assert owner.register(CARD_V1).status_code == 201
    assert rival.heartbeat("translator").status_code == 403
    assert rival.put("translator", card(CARD_V1, name="Hijacked")).status_code == 403
    assert rival.delete("translator").status_code == 403
    assert Agent.objects.get(slug="translator").name == "Translator"


def test_a_users_token_registers_as_the_user_whose_key_may_then_renew(developer: User) -> None:
    token = user_token(developer, scope="registry")["access_token"]
    assert Registrar(Client(), token).register(CARD_V1).status_code == 201
    registration = Registration.objects.get()
    assert registration.owner_principal == f"user:{developer.pk}"
    assert registration.agent.owner == developer
    _, key = ApiKey.issue("same user", owner=developer, scopes=["registry"])
    assert Registrar(Client(), key).heartbeat("translator").status_code == 200


@pytest.mark.parametrize("case", ["expired", "revoked", "unknown"])
def test_a_token_that_is_not_valid_gets_401_saying_so(case: str) -> None:
    app, secret = machine()
    raw = token_for(app, secret, scope="registry")["access_token"]
    if case == "expired":
        AccessToken.objects.update(expires=timezone.now() - timedelta(seconds=1))
    elif case == "revoked":
        AccessToken.objects.get().revoke()
    else:
        raw = "not-a-token-of-this-hub"
    response = Registrar(Client(), raw).register(CARD_V1)
    assert response.status_code == 401
    assert (
        response["WWW-Authenticate"] == f'Bearer realm="a2a-hub", error="invalid_token", {METADATA}'
    )
    assert response.json()["error"]["status"] == "UNAUTHENTICATED"
    assert not Registration.objects.exists()


def test_a_token_of_a_deactivated_user_gets_401(developer: User) -> None:
    token = user_token(developer, scope="registry")["access_token"]
    User.objects.filter(pk=developer.pk).update(is_active=False)
    assert Registrar(Client(), token).register(CARD_V1).status_code == 401


def test_searching_needs_no_scope_but_a_bad_token_is_still_refused() -> None:
    registrar, _ = app_registrar("a2a:invoke")
    assert registrar.search().status_code == 200
    assert Registrar(Client(), "made-up").search().status_code == 401


def test_a_staff_users_token_is_an_operator_only_with_the_operator_scope(
    owner: Registrar, operator: User
) -> None:
    assert owner.register(CARD_V1).status_code == 201
    plain = Registrar(Client(), user_token(operator, scope="registry")["access_token"])
    assert plain.delete("translator").status_code == 403
    operating = Registrar(Client(), user_token(operator, scope="registry operator")["access_token"])
    assert operating.delete("translator").status_code == 204
    assert not Agent.objects.filter(slug="translator").exists()


def test_the_challenge_names_metadata_that_lists_the_scope_and_the_authorization_server(
    anonymous: Registrar, client: Client
) -> None:
    challenge = anonymous.register(CARD_V1)["WWW-Authenticate"]
    url = challenge.split('resource_metadata="')[1].rstrip('"')

    metadata = client.get(url.removeprefix("http://testserver")).json()

    assert "registry" in metadata["scopes_supported"]
    assert metadata["authorization_servers"] == ["http://testserver"]
    server = client.get("/.well-known/oauth-authorization-server").json()
    assert server["token_endpoint"] == "http://testserver/o/token/"
