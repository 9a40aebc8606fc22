"""Saving an agent that would call a private address or the hub itself is refused when it is
saved, naming the field, not only when it is called: an operator in the admin and a developer
on their pages alike (the same form judges both). Loopback is allow-listed, as in
development, for the cases about the hub itself."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from agents.models import Agent
from tests.factories.agent_forms import add_agent

pytestmark = pytest.mark.django_db


def stored_card(url: str) -> str:
    interface = {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    return json.dumps({"card": {"name": "Remote", "supportedInterfaces": [interface]}})


def settings_errors(response: Any) -> str:
    return " ".join(response.context["adminform"].form.errors.get("executor_settings", []))


@pytest.fixture(autouse=True)
def the_hub(settings: Any) -> None:
    settings.HOST, settings.PORT, settings.PUBLIC_BASE_URL = "127.0.0.1", 8000, ""
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1", "localhost"]


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://10.0.0.5/a2a", "a private address"),
        ("http://169.254.169.254/a2a", "a link-local address"),
        ("http://localhost:8000/agents/echo/jsonrpc/", "points at this hub itself"),
    ],
)
def test_a_remote_agent_whose_stored_card_names_a_refused_address_is_not_saved(
    operator_client: Client, url: str, problem: str
) -> None:
    response = add_agent(
        operator_client, executor_kind="a2a-remote", executor_settings=stored_card(url)
    )

    errors = settings_errors(response)
    assert "executor_settings.card.supportedInterfaces[0].url" in errors
    assert problem in errors
    assert not Agent.objects.exists()


def test_a_remote_agent_whose_card_url_is_the_hubs_own_card_is_not_saved(
    operator_client: Client,
) -> None:
    url = "http://127.0.0.1:8000/agents/echo/.well-known/agent-card.json"
    settings = json.dumps({"card_url": url})

    response = add_agent(operator_client, executor_kind="a2a-remote", executor_settings=settings)

    errors = settings_errors(response)
    assert "executor_settings.card_url" in errors and "points at this hub itself" in errors
    assert not Agent.objects.exists()


def test_an_http_agent_whose_backend_is_the_hub_itself_is_not_saved(
    operator_client: Client,
) -> None:
    settings = json.dumps({"url": "http://localhost:8000/agents/echo/jsonrpc/"})

    response = add_agent(operator_client, executor_kind="http", executor_settings=settings)

    errors = settings_errors(response)
    assert "executor_settings.url" in errors and "points at this hub itself" in errors
    assert not Agent.objects.exists()


def test_a_remote_agent_whose_stored_card_is_public_is_saved(operator_client: Client) -> None:
    response = add_agent(
        operator_client, executor_kind="a2a-remote",
        executor_settings=stored_card("https://agent.example/a2a"),
    )  # fmt: skip

    assert response.status_code == 302, settings_errors(response)
    assert Agent.objects.get().executor_kind == "a2a-remote"
