"""Every answer names its request in `X-Request-ID`: the caller's own id when it is sane, a new
one when there is none or it is not (too long, or with characters that could forge a log
line), on the pages Django serves and on the A2A doors and probes the ASGI app serves itself."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from a2ahub import asyncdb
from tests.factories.agents import make_agent
from tests.factories.envelopes import UNKNOWN_TASK, envelope
from tests.factories.versions import V1
from tests.operations.asgi_calls import call, http_scope, in_db

NEW_ID = re.compile(r"[0-9a-f]{32}")
SANE = ["3f1c2a44-0000-4000-8000-00000000abcd", "Root=1-67891233-abcdef012345678912345678",
        "a" * 128, "req.42:retry/2+x=="]  # fmt: skip
HOSTILE = ["two words", 'a"quote', "a" * 129, "ünïcode", "semi;colon\r\nX-Evil: 1", "{json}"]


def test_a_page_echoes_the_callers_request_id(client: Client) -> None:
    for sent in SANE:
        response = client.get("/favicon.ico", headers={"X-Request-ID": sent})
        assert response["X-Request-ID"] == sent


def test_a_page_asked_without_one_answers_with_a_new_id_each_time(client: Client) -> None:
    first = client.get("/favicon.ico")["X-Request-ID"]
    second = client.get("/favicon.ico")["X-Request-ID"]
    assert NEW_ID.fullmatch(first) and NEW_ID.fullmatch(second)
    assert first != second


@pytest.mark.parametrize("sent", HOSTILE)
def test_a_hostile_request_id_is_replaced(client: Client, sent: str) -> None:
    answered = client.get("/favicon.ico", headers={"X-Request-ID": sent})["X-Request-ID"]
    assert NEW_ID.fullmatch(answered)


# Below: through the ASGI app, as daphne serves the hub.


@pytest.fixture
async def served(db: None) -> AsyncIterator[None]:
    await in_db(make_agent, "echo")
    yield
    await asyncdb.close()  # each test has its own event loop; its database pool goes with it


def rpc_scope(request_id: str | None = None, path: str = "/agents/echo/jsonrpc/") -> dict:
    headers = {"content-type": "application/json", "a2a-version": V1}
    if request_id is not None:
        headers["x-request-id"] = request_id
    return http_scope(path, headers=headers)


def send_body(method: str = "SendMessage") -> bytes:
    return json.dumps(envelope(V1, "send", text="hi") | {"method": method}).encode()


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_the_json_rpc_door_echoes_a_sane_id_and_replaces_the_others(served: None) -> None:
    echoed = await call(rpc_scope("trace-7"), send_body())
    assert echoed.status == 200 and "result" in echoed.json()
    assert echoed.headers["x-request-id"] == "trace-7"
    fresh = await call(rpc_scope(), send_body())
    assert NEW_ID.fullmatch(fresh.headers["x-request-id"])
    for sent in HOSTILE:
        replaced = await call(rpc_scope(sent), send_body())
        assert NEW_ID.fullmatch(replaced.headers["x-request-id"]), sent


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_streams_refusals_and_rest_answers_carry_it_too(
    served: None, settings: Settings
) -> None:
    stream = await call(rpc_scope("stream-1"), send_body("SendStreamingMessage"))
    assert stream.headers["content-type"].startswith("text/event-stream")
    assert stream.headers["x-request-id"] == "stream-1"
    path = f"/agents/echo/rest/tasks/{UNKNOWN_TASK}"
    rest = http_scope(path, "GET", {"a2a-version": V1, "x-request-id": "rest-1"})
    answer = await call(rest)
    assert (answer.status, answer.headers["x-request-id"]) == (404, "rest-1")
    settings.A2A_MAX_REQUEST_BYTES = 1024
    too_large = await call(rpc_scope("big-1"), b" " * 2048)
    assert (too_large.status, too_large.headers["x-request-id"]) == (413, "big-1")


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_pages_served_through_the_asgi_app_echo_it(served: None) -> None:
    probe = await call(http_scope("/healthz", "GET", {"x-request-id": "probe-1"}))
    assert (probe.status, probe.headers["x-request-id"]) == (200, "probe-1")
    page = await call(http_scope("/favicon.ico", "GET", {"x-request-id": "page-1"}))
    assert (page.status, page.headers["x-request-id"]) == (301, "page-1")
    missing = await call(http_scope("/nowhere", "GET"))
    assert missing.status == 404 and NEW_ID.fullmatch(missing.headers["x-request-id"])
