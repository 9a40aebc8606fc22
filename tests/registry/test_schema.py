"""The registry's OpenAPI 3 schema at /registry/schema/, generated from its views: it is valid,
says which operations take a credential with the `registry` scope, and every answer a
registration's life brings (each success and each refusal) is one it describes, status and
body."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from typing import Any

import httpx
import pytest
import schemathesis
from django.test import Client
from django.utils import timezone
from openapi_spec_validator import validate

from registry.models import Registration
from tests.factories.agents import make_agent
from tests.registry.conftest import CARD_V1, SEED_003, card

OPERATIONS = {
    ("/registry/agents", "get"), ("/registry/agents", "post"),
    ("/registry/agents/{agent_id}", "get"), ("/registry/agents/{agent_id}", "put"),
    ("/registry/agents/{agent_id}", "delete"), ("/registry/agents/{agent_id}/heartbeat", "post"),
}  # fmt: skip


@pytest.mark.django_db
def test_the_schema_validates_and_says_who_may_call_what(client: Client) -> None:
    response = client.get("/registry/schema/")
    assert response.status_code == 200
    schema = response.json()
    validate(schema)
    paths = schema["paths"]
    found = {
        (path, method) for path, item in paths.items() for method in item if method != "parameters"
    }
    assert found == OPERATIONS
    schemes = schema["components"]["securitySchemes"]
    assert set(schemes["hubOAuth2"]["flows"]["authorizationCode"]["scopes"]) == {"registry"}
    # Searching and reading are open; registering and managing take a credential.
    assert {} in paths["/registry/agents"]["get"]["security"]
    for path, method in [("/registry/agents", "post"), ("/registry/agents/{agent_id}", "put"),
                         ("/registry/agents/{agent_id}", "delete"),
                         ("/registry/agents/{agent_id}/heartbeat", "post")]:  # fmt: skip
        security = paths[path][method]["security"]
        assert {} not in security and {"hubOAuth2": ["registry"]} in security
    body = paths["/registry/agents"]["post"]["requestBody"]["content"]["application/json"]
    titles = [shape["title"] for shape in body["schema"]["oneOf"]]
    assert titles == ["Agent Card (A2A 1.0)", "Agent Card (A2A 0.3)",
                      "Registration (seed 003's shape)", "A card to fetch"]  # fmt: skip


@pytest.mark.django_db
def test_the_schema_in_yaml_when_asked(client: Client) -> None:
    response = client.get("/registry/schema/", HTTP_ACCEPT="application/vnd.oai.openapi")
    assert response.status_code == 200
    assert response.content.startswith(b"openapi: 3")


@pytest.mark.django_db(transaction=True)
def test_every_answer_of_a_registrations_life_is_one_the_schema_describes(
    live_server: Any, owner_key: str, rival_key: str
) -> None:
    schema = schemathesis.openapi.from_url(f"{live_server.url}/registry/schema/")
    seen: list[tuple[str, int]] = []

    def call(method: str, path: str, operation: str, key: str = "", **kwargs: Any) -> int:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        if "json" in kwargs:
            kwargs["content"] = json.dumps(kwargs.pop("json"))
            headers["Content-Type"] = "application/json"
        response = httpx.request(method, f"{live_server.url}{path}", headers=headers,
                                 timeout=30, **kwargs)  # fmt: skip
        documented = schema[operation][method].definition.raw["responses"]
        assert str(response.status_code) in documented, (method, path, response.text)
        schema[operation][method].validate_response(response)
        seen.append((method, response.status_code))
        return response.status_code

    one, agent = "/registry/agents/{agent_id}", "/registry/agents/translator"
    assert call("POST", "/registry/agents", "/registry/agents", owner_key, json=CARD_V1) == 201
    assert call("POST", "/registry/agents", "/registry/agents", owner_key, json=CARD_V1) == 200
    seed = copy.deepcopy(SEED_003)
    assert call("POST", "/registry/agents", "/registry/agents", rival_key, json=seed) == 201
    make_agent("hosted")  # one of the hub's own agents: its id is taken
    taken = call("POST", "/registry/agents?agentId=hosted", "/registry/agents", rival_key,
                 json=CARD_V1)  # fmt: skip
    assert taken == 409
    assert call("POST", "/registry/agents", "/registry/agents", owner_key, json={"name": 1}) == 400
    assert call("POST", "/registry/agents", "/registry/agents", json=CARD_V1) == 401
    assert call("POST", "/registry/agents", "/registry/agents", owner_key, content=b"x") == 415
    assert call("GET", "/registry/agents?q=translat", "/registry/agents") == 200
    assert call("GET", "/registry/agents?pageSize=0", "/registry/agents") == 400
    assert call("GET", agent, one) == 200
    assert call("GET", agent, one, owner_key) == 200  # with the owner's details
    assert call("GET", "/registry/agents/nobody", one) == 404
    assert call("POST", f"{agent}/heartbeat", f"{one}/heartbeat", owner_key) == 200
    assert call("POST", f"{agent}/heartbeat", f"{one}/heartbeat", rival_key) == 403
    assert call("PUT", agent, one, owner_key, json=card(CARD_V1, version="2.1.0")) == 200
    assert call("PUT", agent, one, rival_key, json=CARD_V1) == 403
    Registration.objects.filter(agent__slug="translator").update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert call("GET", agent, one) == 410
    assert call("DELETE", agent, one, rival_key) == 403
    assert call("DELETE", agent, one, owner_key) == 204
    assert call("GET", agent, one) == 404
    assert len(seen) == 20
