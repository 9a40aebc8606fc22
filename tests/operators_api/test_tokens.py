"""The operators' API takes the hub's OAuth2 access tokens too: a token of an active staff
user holding the `operator` scope opens it; the same user's token without the scope gets 403
with an `insufficient_scope` challenge; a non-staff user's token and an application's
client-credentials token (no user at all) get 403; a token that is not valid gets 401."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import AccessToken

from agents.models import ApiKey
from tests.factories.oauth import machine, token_for, user_token
from tests.operators_api.conftest import Api

pytestmark = pytest.mark.django_db

PATHS = ["agents", "keys", "tasks", "deliveries", "registrations"]


def token_api(user: User, scope: str) -> Api:
    return Api(Client(), user_token(user, scope=scope)["access_token"])


@pytest.mark.parametrize("path", PATHS)
def test_a_staff_users_token_with_the_operator_scope_may_read(operator: User, path: str) -> None:
    assert token_api(operator, "operator").get(path).status_code == 200


def test_a_staff_users_token_with_the_operator_scope_may_write(operator: User) -> None:
    created = token_api(operator, "operator").post("keys", {"name": "from a token"})
    assert created.status_code == 201
    assert ApiKey.objects.get().name == "from a token"


def test_a_staff_users_token_without_the_scope_gets_403_naming_it(operator: User) -> None:
    response = token_api(operator, "a2a:invoke registry").get("agents")
    assert response.status_code == 403
    assert response["WWW-Authenticate"] == (
        'Bearer realm="a2a-hub", error="insufficient_scope", scope="operator", '
        'resource_metadata="http://testserver/.well-known/oauth-protected-resource"'
    )
    assert response.json()["error"]["status"] == "PERMISSION_DENIED"


def test_a_non_staff_users_token_gets_403_even_with_the_scope(developer: User) -> None:
    response = token_api(developer, "operator").get("agents")
    assert response.status_code == 403
    assert "staff" in response.json()["error"]["message"]


def test_a_client_credentials_token_has_no_user_and_gets_403(operator: User) -> None:
    app, secret = machine("ops robot", owner=operator)
    raw = token_for(app, secret, scope="operator")["access_token"]
    response = Api(Client(), raw).post("keys", {"name": "robot's"})
    assert response.status_code == 403
    assert not ApiKey.objects.exists()


def test_an_expired_token_and_a_deactivated_staff_users_token_get_401(operator: User) -> None:
    api = token_api(operator, "operator")
    AccessToken.objects.update(expires=timezone.now() - timedelta(seconds=1))
    expired = api.get("agents")
    assert expired.status_code == 401
    assert 'error="invalid_token"' in expired["WWW-Authenticate"]
    fresh = token_api(operator, "operator")
    User.objects.filter(pk=operator.pk).update(is_active=False)
    assert fresh.get("agents").status_code == 401
