"""A card that points at the hub itself is refused at registration, naming the field: hosting
it would make every call to the agent call the hub again. Loopback is allow-listed here, as
in development, so only the hub rule refuses."""

from __future__ import annotations

from typing import Any

import pytest

from agents.models import Agent
from tests.registry.conftest import CARD_V1, Registrar, card

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def loopback_allowed(settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
    settings.HOST, settings.PORT = "127.0.0.1", 8000


def test_a_card_whose_interface_is_the_hub_itself_is_refused_naming_the_field(
    owner: Registrar,
) -> None:
    looping = card(CARD_V1, supportedInterfaces=[
        {"url": "http://localhost:8000/agents/echo/jsonrpc/", "protocolBinding": "JSONRPC",
         "protocolVersion": "1.0"},
    ])  # fmt: skip

    response = owner.register(looping)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["field"] == "supportedInterfaces.url"
    assert "points at this hub itself" in error["message"]
    assert not Agent.objects.filter(executor_kind="a2a-remote").exists()


def test_a_card_url_on_the_hub_itself_is_refused_naming_the_field(owner: Registrar) -> None:
    response = owner.register({"cardUrl": "http://127.0.0.1:8000/.well-known/agent-card.json"})

    assert response.status_code == 400
    assert response.json()["error"]["field"] == "cardUrl"
    assert "points at this hub itself" in response.json()["error"]["message"]
