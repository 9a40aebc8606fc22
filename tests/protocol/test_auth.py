"""Credentials come before JSON-RPC: an agent that requires an API key answers every method
of both versions with HTTP 401 and a WWW-Authenticate challenge when the key is missing or
wrong, and takes the request when it is right."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from agents import audit
from agents.models import Agent, ApiKey
from tests.factories.agents import make_agent
from tests.factories.envelopes import SAMPLES, envelope
from tests.factories.versions import V03, V1
from tests.protocol.answers import result_of, state_of
from tests.protocol.callers import Caller

pytestmark = pytest.mark.django_db

EVERY_METHOD = [(version, op) for version, ops in SAMPLES.items() for op in ops]


def assert_refused(response: Any) -> None:
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'ApiKey realm="a2a-hub", header="X-API-Key"'
    body = response.json()
    assert body["error"]["code"] == 401
    assert "result" not in body


@pytest.mark.parametrize(("version", "op"), EVERY_METHOD)
def test_it_refuses_a_caller_without_a_key(
    anonymous: Caller, echo: Agent, version: str, op: str
) -> None:
    assert_refused(anonymous.rpc("echo", version, op))


@pytest.mark.parametrize(("version", "op"), EVERY_METHOD)
def test_it_refuses_a_key_it_never_issued(
    impostor: Caller, echo: Agent, version: str, op: str
) -> None:
    assert_refused(impostor.rpc("echo", version, op))


@pytest.mark.parametrize(("version", "op"), EVERY_METHOD)
def test_it_takes_a_valid_key(caller: Caller, echo: Agent, version: str, op: str) -> None:
    response = caller.rpc("echo", version, op)

    # Past the door, each method answers in JSON-RPC (the sample ids name no real task).
    assert response.status_code == 200
    assert response.json()["jsonrpc"] == "2.0"


def test_it_refuses_credentials_before_reading_the_body(anonymous: Caller, echo: Agent) -> None:
    assert_refused(anonymous.post("echo", "this is not json", V1))


def test_it_refuses_a_key_sent_in_a_place_the_card_does_not_name(
    caller: Caller, echo: Agent
) -> None:
    response = caller.client.post(
        "/agents/echo/jsonrpc/",
        data=envelope(V1, "send"),
        content_type="application/json",
        headers={"A2A-Version": V1, "Authorization": f"Bearer {caller.key}"},
    )

    assert_refused(response)


def test_it_refuses_a_revoked_key(caller: Caller, echo: Agent) -> None:
    ApiKey.objects.update(revoked_at=timezone.now())

    assert_refused(caller.rpc("echo", V1, "send"))


@pytest.mark.usefixtures("door")
def test_it_refuses_a_key_issued_for_another_agent(echo: Agent) -> None:
    other = make_agent("other")
    _, raw = ApiKey.issue("only for other", agent=other)

    assert_refused(Caller(raw).rpc("echo", V1, "send"))
    assert result_of(Caller(raw).rpc("other", V1, "send"))["task"]


def test_it_refuses_a_tampered_key(caller: Caller, echo: Agent) -> None:
    assert caller.key is not None
    tampered = Caller(caller.key[:-2] + ("AA" if not caller.key.endswith("AA") else "BB"))

    assert_refused(tampered.rpc("echo", V1, "send"))


def test_it_records_when_a_key_was_last_used(caller: Caller, echo: Agent) -> None:
    assert ApiKey.objects.get(name="caller").last_used_at is None

    caller.rpc("echo", V1, "send")
    audit.flush()  # the audit log's batch, which each process writes from its heartbeat

    assert ApiKey.objects.get(name="caller").last_used_at is not None


def test_it_names_a_bearer_scheme_in_its_challenge(anonymous: Caller) -> None:
    make_agent(
        "bearer",
        security_schemes={"bearer": {"type": "http", "scheme": "bearer"}},
        security_requirements=[{"bearer": []}],
    )

    response = anonymous.rpc("bearer", V1, "send")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="a2a-hub"'


def test_it_takes_a_key_as_a_bearer_token_where_the_card_says_so(caller: Caller) -> None:
    make_agent(
        "bearer",
        security_schemes={"bearer": {"type": "http", "scheme": "bearer"}},
        security_requirements=[{"bearer": []}],
    )

    response = Caller(None).client.post(
        "/agents/bearer/jsonrpc/",
        data=envelope(V1, "send"),
        content_type="application/json",
        headers={"A2A-Version": V1, "Authorization": f"Bearer {caller.key}"},
    )

    assert state_of(result_of(response)["task"]) == "completed"


@pytest.mark.parametrize("version", [V1, V03])
def test_it_serves_anonymous_callers_where_the_agent_requires_nothing(
    anonymous: Caller, version: str
) -> None:
    make_agent("open")

    task = anonymous.send("open", version)

    assert state_of(task) == "completed"
    assert state_of(anonymous.get("open", version, task["id"])) == "completed"


def test_it_refuses_a_wrong_key_even_where_the_agent_requires_nothing(impostor: Caller) -> None:
    make_agent("open")

    assert impostor.rpc("open", V1, "send").status_code == 401
