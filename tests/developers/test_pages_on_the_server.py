"""The site's pages as the hub's own ASGI application serves them (`a2ahub.page_handler`: the
middleware chain and the view on one thread a request), not as Django's test clients do.

- anonymous: sent to sign in; signs in with the form's CSRF token and a password, and is then
  a session that the next page knows;
- `developer` (tests/conftest.py): chats with their agent, the one async view, whose answer
  streams as its events come.
"""

from __future__ import annotations

import re
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import User

from tests.developers.chat_client import chat_url, chunks, frames, states
from tests.door_client import Door, DoorResponse
from tests.factories.agents import make_agent

pytestmark = pytest.mark.usefixtures("door")

FORM = "application/x-www-form-urlencoded"


def keep_cookies(door: Door, response: DoorResponse) -> None:
    """What a browser does with the answer's cookies."""
    jar = SimpleCookie(door.cookies)
    jar.update(response.cookies)
    door.cookies = "; ".join(f"{key}={morsel.value}" for key, morsel in jar.items())


def csrf_token_of(page: DoorResponse) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert found, "the form carries its CSRF token"
    return found.group(1)


def signed_in(door: Door, username: str, password: str) -> DoorResponse:
    form = door.get("/dev/login/", {"next": "/dev/applications/"})
    assert form.status_code == 200
    keep_cookies(door, form)
    token = csrf_token_of(form)
    fields = {"username": username, "password": password, "csrfmiddlewaretoken": token}
    answer = door.post("/dev/login/?next=/dev/applications/", urlencode(fields), FORM)
    keep_cookies(door, answer)
    return answer


def test_a_visitor_signs_in_through_the_hubs_own_server_and_the_next_page_knows_them(
    developer: User,
) -> None:
    door = Door()
    assert door.get("/dev/applications/").status_code == 302  # not signed in yet

    answer = signed_in(door, "dev", "developer-pass-123")

    assert answer.status_code == 302 and answer["Location"] == "/dev/applications/"
    page = door.get("/dev/applications/")
    assert page.status_code == 200 and "My applications" in page.text
    assert page["X-Request-ID"] and page.has_header("Content-Security-Policy")


def test_a_wrong_password_is_refused_on_the_form_through_the_hubs_own_server(
    developer: User,
) -> None:
    door = Door()
    answer = signed_in(door, "dev", "not-the-password")
    assert answer.status_code == 200 and "Please enter a correct username" in answer.text
    assert door.get("/dev/applications/").status_code == 302


def test_a_post_without_the_csrf_token_is_refused_by_the_hubs_own_server(developer: User) -> None:
    door = Door()
    door.force_login(developer)
    fields = {"name": "app", "authorization_grant_type": "client-credentials"}
    assert door.post("/dev/applications/", urlencode(fields), FORM).status_code == 403


def test_the_chat_an_async_view_streams_its_answer_through_the_hubs_own_server(
    developer: User,
) -> None:
    make_agent("echo", executor_settings={"chunks": 3}, owner=developer)
    door = Door()
    signed_in(door, "dev", "developer-pass-123")
    page = door.get(chat_url("echo"))
    assert page.status_code == 200
    token = SimpleCookie(door.cookies)["csrftoken"].value
    headers: dict[str, Any] = {"X-CSRFToken": token}

    answer = door.post(chat_url("echo", "send"), urlencode({"text": "hello"}), FORM, headers)

    assert answer.status_code == 200 and answer["Content-Type"] == "text/event-stream"
    events = frames(b"".join(answer.streaming_content).decode())
    assert states(events) == ["submitted", "working", "completed"]
    assert chunks(events) == ["hello", "hello", "hello"]
