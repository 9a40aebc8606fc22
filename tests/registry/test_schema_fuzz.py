"""Schemathesis over the registry's API, from a live server: the registry has no generated
schema (its views read JSON by hand and judge cards with the SDK's models), so this file
writes down the contract the README gives, loosely (a card is an object with the fields a 1.0
card needs), and every operation is called with what it allows and what it does not, as the
owner of one registration. No answer may be a 5xx.

Interface and card URLs are taken from a short list (a documentation domain, a closed local
port), so the fuzzing never sends the hub to the wider network. Derandomized and bounded
here; `make fuzz` (HYPOTHESIS_PROFILE=deep) runs many more cases with fresh randomness."""

from __future__ import annotations

import json
from typing import Any

import pytest
import schemathesis
from django.contrib.auth.models import User
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from agents.models import ApiKey
from tests.registry.conftest import CARD_V1, SEED_003, Registrar
from tests.schema_fuzzing import TIMEOUT, fuzz

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(TIMEOUT)]

URLS = {"type": "string", "enum": ["https://translator.example/a2a", "http://127.0.0.1:9/a2a"]}
STRINGS = {"type": "array", "items": {"type": "string"}}
CARD = {
    "type": "object",
    "required": ["name", "description", "version", "supportedInterfaces", "capabilities",
                 "defaultInputModes", "defaultOutputModes", "skills"],
    "properties": {
        "name": {"type": "string"}, "description": {"type": "string"},
        "version": {"type": "string"},
        "supportedInterfaces": {"type": "array", "items": {
            "type": "object", "required": ["url", "protocolBinding", "protocolVersion"],
            "properties": {"url": URLS, "protocolBinding": {"type": "string"},
                           "protocolVersion": {"type": "string"}}}},
        "capabilities": {"type": "object", "properties": {"streaming": {"type": "boolean"}}},
        "defaultInputModes": STRINGS, "defaultOutputModes": STRINGS,
        "skills": {"type": "array", "items": {
            "type": "object", "required": ["id", "name", "description", "tags"],
            "properties": {"id": {"type": "string"}, "name": {"type": "string"},
                           "description": {"type": "string"}, "tags": STRINGS}}},
    },
}  # fmt: skip
SEED = {
    "type": "object",
    "required": ["id", "name", "capabilities", "endpoints"],
    "properties": {
        "id": {"type": "string"}, "name": {"type": "string"}, "version": {"type": "string"},
        "capabilities": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "inputTypes": STRINGS, "outputTypes": STRINGS}}},
        "endpoints": {"type": "array", "items": {"type": "object", "properties": {
            "type": {"type": "string"}, "url": URLS}}},
        "supportedProtocols": STRINGS, "tags": STRINGS, "category": {"type": "string"},
    },
}  # fmt: skip
BY_URL = {
    "type": "object", "required": ["cardUrl"],
    "properties": {"cardUrl": {"type": "string", "enum": ["http://127.0.0.1:9/card.json"]}},
}  # fmt: skip
BODY = {"required": True, "content": {"application/json": {"schema": {
    "oneOf": [CARD, SEED, BY_URL]}}}}  # fmt: skip
AGENT_ID = {"name": "agentId", "in": "path", "required": True, "schema": {"type": "string"}}
TTL = {"name": "ttl", "in": "query", "schema": {"type": "integer"}}
ANSWER = {"description": "the registry's answer"}
ANSWERS = {"200": ANSWER, "201": ANSWER, "204": ANSWER}


def query(*names: str) -> list[dict[str, Any]]:
    return [{"name": n, "in": "query", "schema": {"type": "string"}} for n in names]


REGISTRY_OPENAPI: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "A2A Hub registry (as the README describes it)", "version": "1"},
    "paths": {
        "/registry/agents": {
            "get": {"parameters": [*query("q", "tag", "skill", "category", "protocol", "cursor"),
                                   {"name": "pageSize", "in": "query",
                                    "schema": {"type": "integer"}}],
                    "responses": ANSWERS},
            "post": {"parameters": [TTL, *query("agentId")], "requestBody": BODY,
                     "responses": ANSWERS},
        },
        "/registry/agents/{agentId}": {
            "parameters": [AGENT_ID],
            "get": {"responses": ANSWERS},
            "put": {"parameters": [TTL], "requestBody": BODY, "responses": ANSWERS},
            "delete": {"responses": ANSWERS},
        },
        "/registry/agents/{agentId}/heartbeat": {
            "parameters": [AGENT_ID],
            "post": {"parameters": [TTL], "responses": ANSWERS},
        },
    },
}  # fmt: skip


def strategies(operation: Any, agent_ids: list[str]) -> Any:
    """What the contract allows and what it does not; for one agent's operations, also cases
    naming a registered agent (the owner's own, and another principal's)."""
    modes = [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]
    cases = [operation.as_strategy(generation_mode=mode) for mode in modes]
    if "{agentId}" in operation.path:
        cases += [
            operation.as_strategy(generation_mode=mode, path_parameters={"agentId": agent_id})
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
    schema = schemathesis.openapi.from_dict(REGISTRY_OPENAPI)
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
                [not_a_server_error],
            )
        )
    ]
    assert not failures, "\n\n".join(failures)
