"""Schemathesis over the registry's API, from the schema a live server serves at
/registry/schema/: every operation is called with what it allows and what it does not, as the
owner of one registration. No answer may be a 5xx, and every answer must be one the schema
describes (its status and its body).

Interface and card URLs are taken from a short list (a documentation domain, a closed local
port), so the fuzzing never sends the hub to the wider network. Derandomized and bounded
here; `make fuzz` (HYPOTHESIS_PROFILE=deep) runs many more cases with fresh randomness."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import schemathesis
from django.contrib.auth.models import User
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import (
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from agents.models import ApiKey
from tests.registry.conftest import CARD_V1, SEED_003, Registrar
from tests.schema_fuzzing import TIMEOUT, fuzz

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(TIMEOUT)]

# The URLs a generated body may hold: the hub fetches a body's `cardUrl`, so the fuzzing keeps
# to a closed local port (and interface URLs to a documentation domain).
CARD_URLS = {"type": "string", "enum": ["http://127.0.0.1:9/card.json"]}
INTERFACE_URLS = {"type": "string", "enum": ["https://translator.example/a2a",
                                             "http://127.0.0.1:9/a2a"]}  # fmt: skip


def narrowed(schema: dict[str, Any]) -> dict[str, Any]:
    """The served schema with every URL a request body may carry narrowed to the safe ones
    (the answers' schemas stay as served)."""
    bodies = [operation["requestBody"] for item in schema["paths"].values()
              for operation in item.values()
              if isinstance(operation, dict) and "requestBody" in operation]  # fmt: skip
    for body in bodies:
        narrow_urls(body)
    return schema


def narrow_urls(node: Any) -> None:
    if isinstance(node, list):
        for value in node:
            narrow_urls(value)
    if not isinstance(node, dict):
        return
    properties = node.get("properties", {})
    if "cardUrl" in properties:
        properties["cardUrl"] = CARD_URLS
    if "url" in properties:
        properties["url"] = INTERFACE_URLS
    for value in node.values():
        narrow_urls(value)


def strategies(operation: Any, agent_ids: list[str]) -> Any:
    """What the contract allows and what it does not; for one agent's operations, also cases
    naming a registered agent (the owner's own, and another principal's)."""
    modes = [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]
    cases = [operation.as_strategy(generation_mode=mode) for mode in modes]
    if "{agent_id}" in operation.path:
        cases += [
            operation.as_strategy(generation_mode=mode, path_parameters={"agent_id": agent_id})
            for mode in modes
            for agent_id in agent_ids
        ]
    return st.one_of(cases)


def test_no_registry_operation_answers_with_a_server_error(
    live_server: Any, owner: Registrar, rival: Registrar, settings: Any
) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]  # a card URL is tried: a closed local port
    assert owner.register(CARD_V1).status_code == 201
    assert rival.register(json.loads(json.dumps(SEED_003))).status_code == 201
    key = ApiKey.issue("fuzzer", owner=User.objects.get(username="dev"), scopes=["registry"])[1]
    served = httpx.get(f"{live_server.url}/registry/schema/", timeout=30).json()
    schema = schemathesis.openapi.from_dict(narrowed(served))
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 6
    headers = {"Authorization": f"Bearer {key}"}
    agent_ids = ["translator", "weather-agent-001"]
    failures = [
        failure
        for operation in operations
        if (
            failure := fuzz(
                operation,
                strategies(operation, agent_ids),
                live_server.url,
                headers,
                [not_a_server_error, status_code_conformance, response_schema_conformance],
            )
        )
    ]
    assert not failures, "\n\n".join(failures)
