"""Personas of the operators' API.

- `staff_api`: a hub-wide API key of the staff user `operator`, as a bearer token; may do
  everything the API offers.
- `session_api`: the operator's staff session (the admin's); the same rights.
- `developer_api`: a hub-wide key of a user without staff rights; refused (403) everywhere.
- `anonymous_api`: no credentials; refused (401 with a challenge) everywhere.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from agents.models import ApiKey


class Api:
    """The operators' API as one caller sees it: JSON in, JSON out."""

    def __init__(self, client: Client, key: str = "") -> None:
        self.client = client
        self.headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"} if key else {}

    def get(self, path: str) -> Any:
        return self.client.get(f"/api/{path}", HTTP_ACCEPT="application/json", **self.headers)

    def send(self, method: str, path: str, body: Any = None) -> Any:
        call = getattr(self.client, method)
        data = json.dumps(body) if body is not None else ""
        return call(f"/api/{path}", data, content_type="application/json",
                    HTTP_ACCEPT="application/json", **self.headers)  # fmt: skip

    def post(self, path: str, body: Any = None) -> Any:
        return self.send("post", path, body)


@pytest.fixture
def staff_api(operator: User) -> Api:
    return Api(Client(), ApiKey.issue("operations script", owner=operator)[1])


@pytest.fixture
def session_api(operator_client: Client) -> Api:
    return Api(operator_client)


@pytest.fixture
def developer_api(developer: User) -> Api:
    return Api(Client(), ApiKey.issue("developer's key", owner=developer)[1])


@pytest.fixture
def anonymous_api(db: None) -> Api:
    return Api(Client())


def agent_body(slug: str = "weather", **fields: Any) -> dict[str, Any]:
    """A whole agent as the API creates it: an echo agent with one skill."""
    body: dict[str, Any] = {
        "slug": slug,
        "name": "Weather",
        "description": "Tells the weather.",
        "executor_kind": "echo",
        "skills": [
            {"skill_id": "forecast", "name": "Forecast", "description": "Tomorrow's weather.",
             "tags": ["weather"]},
        ],
    }  # fmt: skip
    return body | fields
