"""The developer pages' OAuth2 applications: a user makes one (its client secret shown on that
answer only), sees their own in a list by client id, and deletes one after a confirmation.

Personas and their rights:
- `developer` (tests/conftest.py): signed in; owns the applications made here as them.
- `rival`: another signed-in user; the developer's applications do not exist for them (404)
  and never appear in their list.
- anonymous: sent to the sign-in page.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from oauth2_provider.models import AccessToken, Application

from agents.models import Access
from tests.door_client import Door
from tests.factories.agents import owned
from tests.factories.oauth import machine, token_for

pytestmark = pytest.mark.django_db

PAGE = "/dev/applications/"


@pytest.fixture
def rival(db: None) -> User:
    return User.objects.create_user("rival", "rival@example.com", "rival-pass-123")


def create(client: Client, **fields: str) -> Any:
    data = {"name": "robot", "authorization_grant_type": "client-credentials", "redirect_uris": ""}
    return client.post(PAGE, data | fields)


def token_status(client_id: str, secret: str) -> int:
    basic = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    headers = {"Authorization": f"Basic {basic}"}
    response = Client().post("/o/token/", {"grant_type": "client_credentials"}, headers=headers)
    return response.status_code


def send_with_token(slug: str, token: str) -> Any:
    envelope = {
        "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}},
    }  # fmt: skip
    return Door().post(
        f"/agents/{slug}/jsonrpc/", json.dumps(envelope), content_type="application/json",
        headers={"A2A-Version": "1.0", "Authorization": f"Bearer {token}"},
    )  # fmt: skip


def test_the_pages_send_an_anonymous_visitor_to_sign_in(client: Client, developer: User) -> None:
    app, _ = machine(owner=developer)
    for path in (PAGE, f"{PAGE}{app.pk}/delete/"):
        response = client.post(path, {"name": "x"})
        assert response.status_code == 302
        assert response["Location"] == f"/dev/login/?next={path}"
    assert Application.objects.count() == 1


def test_a_new_application_shows_its_secret_once_and_the_secret_gets_tokens(
    dev_client: Client, developer: User
) -> None:
    response = create(dev_client)
    assert response.status_code == 200
    assert response["Cache-Control"].startswith("max-age=0")
    app = Application.objects.get()
    assert (app.user, app.name) == (developer, "robot")
    assert app.client_type == Application.CLIENT_CONFIDENTIAL
    assert app.authorization_grant_type == Application.GRANT_CLIENT_CREDENTIALS
    secret = response.context["secret"]
    page = response.content.decode()
    assert app.client_id in page and secret in page
    assert app.client_secret != secret  # only its hash is kept
    assert token_status(app.client_id, secret) == 200

    later = dev_client.get(PAGE).content.decode()
    assert app.client_id in later
    assert secret not in later


def test_an_application_for_people_needs_a_redirect_uri(dev_client: Client) -> None:
    response = create(dev_client, authorization_grant_type="authorization-code")
    assert response.status_code == 400
    assert response.context["form"].errors["redirect_uris"]
    assert not Application.objects.exists()


@pytest.mark.parametrize(
    ("uris", "said"),
    [
        ("", ["People are sent back to a redirect URI after they consent: give at least one."]),
        ("https://client.example/back#done",
         ["https://client.example/back#done has a fragment (#done), which a redirect URI may "
          "not have."]),
        ("https:///back", ["https:///back names no host."]),
        ("https://client.example/ok\ncallback.example/back http://[::1/x",
         ["callback.example/back is not an http or https URL (one URI a line; a space ends a "
          "URI).", "http://[::1/x is not a URL."]),
    ],
)  # fmt: skip
def test_each_bad_redirect_uri_is_named_with_what_is_wrong_with_it(
    dev_client: Client, uris: str, said: list[str]
) -> None:
    response = create(dev_client, authorization_grant_type="authorization-code", redirect_uris=uris)
    assert response.status_code == 400
    assert response.context["form"].errors["redirect_uris"] == said
    assert not Application.objects.exists()


def test_an_application_for_people_keeps_its_redirect_uris(dev_client: Client) -> None:
    uris = "https://client.example/back\nhttp://localhost:8765/cb"
    response = create(dev_client, authorization_grant_type="authorization-code", redirect_uris=uris)
    assert response.status_code == 200
    app = Application.objects.get()
    assert app.authorization_grant_type == Application.GRANT_AUTHORIZATION_CODE
    assert app.redirect_uris.split() == uris.split()
    assert app.client_type == Application.CLIENT_CONFIDENTIAL


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"name": ""}, "name", "required"),
        ({"authorization_grant_type": "password"}, "authorization_grant_type", "valid choice"),
        ({"authorization_grant_type": "authorization-code", "redirect_uris": "ftp://x.example/"},
         "redirect_uris", "ftp://x.example/ is not an http or https url"),
        ({"redirect_uris": "https://client.example/back"}, "redirect_uris", "leave this empty"),
    ],
)  # fmt: skip
def test_the_form_refuses_bad_input_next_to_the_field(
    dev_client: Client, fields: dict[str, str], field: str, words: str
) -> None:
    response = create(dev_client, **fields)
    assert response.status_code == 400
    assert words in " ".join(response.context["form"].errors[field]).lower()
    assert not Application.objects.exists()


def test_a_user_sees_only_their_own_applications(
    dev_client: Client, developer: User, rival: User
) -> None:
    mine, _ = machine("mine", owner=developer)
    theirs, _ = machine("theirs", owner=rival)
    page = dev_client.get(PAGE).content.decode()
    assert mine.client_id in page
    assert theirs.client_id not in page


def test_another_users_application_cannot_be_deleted(dev_client: Client, rival: User) -> None:
    theirs, _ = machine("theirs", owner=rival)
    path = f"{PAGE}{theirs.pk}/delete/"
    assert dev_client.get(path).status_code == 404
    assert dev_client.post(path).status_code == 404
    assert Application.objects.filter(pk=theirs.pk).exists()


@pytest.mark.usefixtures("door")
def test_deleting_asks_first_then_its_tokens_stop_working(
    dev_client: Client, developer: User
) -> None:
    agent = owned("mine", developer, oauth2=True, access=Access.LISTED)
    app, secret = machine("robot", owner=developer)
    agent.allowed_applications.add(app)
    token = token_for(app, secret)["access_token"]
    assert send_with_token("mine", token).status_code == 200

    confirm = dev_client.get(f"{PAGE}{app.pk}/delete/")
    assert confirm.status_code == 200
    assert "1 agent lists it" in confirm.content.decode()
    assert Application.objects.filter(pk=app.pk).exists()

    response = dev_client.post(f"{PAGE}{app.pk}/delete/")
    assert response.status_code == 302
    assert response["Location"] == PAGE
    assert not Application.objects.filter(pk=app.pk).exists()
    assert not AccessToken.objects.exists()
    assert send_with_token("mine", token).status_code == 401
    assert token_status(app.client_id, secret) == 401
