"""Only staff may use the operators' API: anonymous callers are challenged, other users are
refused, and a key of a staff user or a staff session opens it."""

from __future__ import annotations

import pytest

from tests.operators_api.conftest import Api

pytestmark = pytest.mark.django_db

PATHS = ["agents", "keys", "tasks", "deliveries", "registrations"]


@pytest.mark.parametrize("path", PATHS)
def test_anonymous_callers_get_401_with_a_challenge(anonymous_api: Api, path: str) -> None:
    response = anonymous_api.get(path)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert response.json()["error"]["status"] == "UNAUTHENTICATED"


@pytest.mark.parametrize("path", PATHS)
def test_users_without_staff_rights_get_403(developer_api: Api, path: str) -> None:
    response = developer_api.get(path)
    assert response.status_code == 403
    assert response.json()["error"]["status"] == "PERMISSION_DENIED"


def test_a_non_staff_key_cannot_issue_keys(developer_api: Api) -> None:
    response = developer_api.post("keys", {"name": "mine now"})
    assert response.status_code == 403


def test_an_unknown_key_gets_401(anonymous_api: Api) -> None:
    anonymous_api.headers = {"HTTP_AUTHORIZATION": "Bearer a2a_000000000000_nope"}
    assert anonymous_api.get("agents").status_code == 401


@pytest.mark.parametrize("path", PATHS)
def test_a_staff_key_and_a_staff_session_may_read(
    staff_api: Api, session_api: Api, path: str
) -> None:
    assert staff_api.get(path).status_code == 200
    assert session_api.get(path).status_code == 200
