"""Hostile strings in a request: lone UTF-16 surrogates (legal JSON escapes, but no Unicode
character), NUL (Unicode, but PostgreSQL's text and jsonb cannot store it), bodies that are
not UTF-8, and versions the hub does not serve. Each gets a JSON-RPC envelope with the exact
error, the same on SQLite and PostgreSQL, and a refused request stores nothing. Valid strings,
however rare, come back exactly as they were sent."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from asgiref.sync import sync_to_async
from asgiref.testing import ApplicationCommunicator
from django.db import connection

from a2ahub import asyncdb
from a2ahub.asgi import application
from agents.models import Agent
from protocol.jsonrpc import rpc_response
from push.models import PushNotificationConfig
from tasks.models import Message, Task, TaskEvent
from tests.factories.agents import SECURED, make_agent
from tests.factories.envelopes import UNKNOWN_TASK, envelope, rpc_body, sample, url
from tests.factories.errors import hub_error, invalid_params
from tests.factories.messages import text_part
from tests.factories.push import create_params, webhook
from tests.factories.versions import METHODS, V1, VERSIONS
from tests.protocol.answers import error_of, result_of, task_of
from tests.protocol.callers import Caller

pytestmark = pytest.mark.django_db

# Sent as the escapes \u0000 and \ud800: json.dumps spells them so, as a hostile client would.
NUL = "\x00"
SURROGATE = "\ud800"
BAD = pytest.mark.parametrize("bad", [NUL, SURROGATE], ids=["nul", "surrogate"])
# What the refusal says of each, and how a member's name holding it is written in a field.
PROBLEM = {
    NUL: "U+0000 (NUL), which the hub cannot store",
    SURROGATE: "a lone UTF-16 surrogate, which is not Unicode",
}
ESCAPED = {NUL: "\\u0000", SURROGATE: "\\ud800"}
LONE_ID = 'The request "id" holds a lone UTF-16 surrogate, which is not Unicode.'
LONE_METHOD = 'The request "method" holds a lone UTF-16 surrogate, which is not Unicode.'
NOT_JSON = "The body is not valid JSON."
# The SDK's table of ErrorInfo reasons has none for a parse error.
PARSE_REASON = "UNKNOWN_ERROR"


def data_part(version: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"data": data} if version == V1 else {"kind": "data", "data": data}


# Each kind of field a message carries: (the message's fields holding `bad`, the field the
# refusal names, whether the member's name holds it rather than its value).
Placed = tuple[dict[str, Any], str, bool]
MESSAGE_FIELDS: dict[str, Callable[[str, str], Placed]] = {
    "messageId": lambda v, bad: ({"messageId": f"msg-{bad}"}, "message.messageId", False),
    "text part": lambda v, bad: (
        {"parts": [text_part(v, f"hello {bad}")]}, "message.parts[0].text", False
    ),
    "data part key": lambda v, bad: (
        {"parts": [data_part(v, {f"k{bad}": 1})]},
        f'message.parts[0].data["k{ESCAPED[bad]}"]', True,
    ),
    "data part value": lambda v, bad: (
        {"parts": [data_part(v, {"k": [1, f"v{bad}"]})]}, "message.parts[0].data.k[1]", False
    ),
    "metadata key": lambda v, bad: (
        {"metadata": {f"k{bad}": "v"}}, f'message.metadata["k{ESCAPED[bad]}"]', True
    ),
    "metadata value": lambda v, bad: ({"metadata": {"k": f"v{bad}"}}, "message.metadata.k", False),
    "contextId": lambda v, bad: ({"contextId": f"ctx-{bad}"}, "message.contextId", False),
    "taskId": lambda v, bad: ({"taskId": f"{UNKNOWN_TASK}{bad}"}, "message.taskId", False),
}  # fmt: skip


def refused(version: str, field: str, bad: str, is_name: bool = False) -> dict[str, Any]:
    """The -32602 naming the field that holds `bad` (or whose name does)."""
    problem = f"{'its name holds' if is_name else 'holds'} {PROBLEM[bad]}"
    return invalid_params(version, field, problem)


def internal_error(version: str, message: str) -> dict[str, Any]:
    """The -32603 whose message names its reference (the one in the log), and no more."""
    match = re.fullmatch(r"Internal error \(reference ([0-9a-f]{12})\)", message)
    assert match, message
    return hub_error(version, -32603, message, "INTERNAL_ERROR", reference=match.group(1))


def nothing_stored() -> bool:
    return not (
        Task.objects.exists()
        or TaskEvent.objects.exists()
        or Message.objects.exists()
        or PushNotificationConfig.objects.exists()
    )


@pytest.fixture
def json_echo(db: None) -> Agent:
    # Takes data parts as well as text, so that every kind of part reaches the handler.
    return make_agent(
        "json-echo", **SECURED, default_input_modes=["text/plain", "application/json"]
    )


# -- params: refused with -32602 naming the field, on every backend alike -------------------


@BAD
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", MESSAGE_FIELDS)
def test_it_refuses_a_message_holding_a_string_it_cannot_carry_and_stores_nothing(
    caller: Caller, json_echo: Agent, version: str, bad: str, kind: str
) -> None:
    fields, field, is_name = MESSAGE_FIELDS[kind](version, bad)

    error = caller.error("json-echo", version, "send", message=fields)

    assert error == refused(version, field, bad, is_name)
    assert nothing_stored()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("field", ["messageId", "contextId"])
def test_it_refuses_an_id_longer_than_it_stores_and_stores_nothing(
    caller: Caller, echo: Agent, version: str, field: str
) -> None:
    # 201 characters of two bytes each: the limit counts characters, as the column does.
    error = caller.error("echo", version, "send", message={field: "é" * 201})

    message_field = f"message.{field}"
    assert error == invalid_params(version, message_field, "must be at most 200 characters")
    assert nothing_stored()


@pytest.mark.parametrize("version", VERSIONS)
def test_it_takes_ids_as_long_as_it_stores(caller: Caller, echo: Agent, version: str) -> None:
    ids = {"messageId": "é" * 200, "contextId": "ç" * 200}

    caller.result("echo", version, "send", message=ids)

    assert Message.objects.get().message_id == ids["messageId"]
    assert Task.objects.get().context_id == ids["contextId"]


@BAD
@pytest.mark.parametrize("version", VERSIONS)
def test_it_refuses_a_streamed_message_the_same_way(
    caller: Caller, echo: Agent, version: str, bad: str
) -> None:
    body = envelope(version, "send", text=f"hi {bad}") | {"method": METHODS[version]["stream"]}

    response = caller.post("echo", body, version)

    expected = refused(version, "message.parts[0].text", bad)
    if version == V1:
        assert error_of(response) == expected
    else:
        # 0.3 clients read a streaming method's answer as a stream, errors included.
        text = response.text
        assert text.startswith("data: ") and text.endswith("\n\n")
        assert json.loads(text[6:]) == {"jsonrpc": "2.0", "id": 1, "error": expected}
    assert nothing_stored()


@BAD
@pytest.mark.parametrize("version", VERSIONS)
def test_it_refuses_a_push_config_url_it_cannot_carry(
    caller: Caller, echo: Agent, version: str, bad: str
) -> None:
    config = webhook(version, f"https://receiver.example/hook{bad}")
    params = create_params(version, UNKNOWN_TASK, config)

    error = error_of(caller.post("echo", rpc_body(version, "create_config", params), version))

    field = "url" if version == V1 else "pushNotificationConfig.url"
    assert error == refused(version, field, bad)
    assert nothing_stored()


@BAD
@pytest.mark.parametrize("version", VERSIONS)
def test_it_refuses_a_task_id_it_cannot_carry(
    caller: Caller, echo: Agent, version: str, bad: str
) -> None:
    error = caller.error("echo", version, "get", {"id": f"{UNKNOWN_TASK}{bad}"})

    assert error == refused(version, "id", bad)


@pytest.mark.parametrize("version", VERSIONS)
def test_it_finds_surrogate_escapes_spelled_in_upper_case(
    caller: Caller, echo: Agent, version: str
) -> None:
    raw = json.dumps(envelope(version, "send", text="hi \udc00")).replace("\\udc00", "\\uDC00")

    error = error_of(caller.post("echo", raw, version))

    assert error == refused(version, "message.parts[0].text", SURROGATE)
    assert nothing_stored()


# -- the envelope: id and method -----------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_it_answers_a_lone_surrogate_id_with_invalid_request_and_a_null_id(
    caller: Caller, echo: Agent, version: str
) -> None:
    body = sample(version, "send") | {"id": f"req-{SURROGATE}"}

    response = caller.post("echo", body, version)

    assert response.status_code == 200
    error = hub_error(version, -32600, LONE_ID, "INVALID_REQUEST")
    assert response.json() == {"jsonrpc": "2.0", "id": None, "error": error}
    assert nothing_stored()


@pytest.mark.parametrize("version", VERSIONS)
def test_it_echoes_an_id_holding_nul_exactly(caller: Caller, echo: Agent, version: str) -> None:
    # The id is never stored, so it may hold any Unicode.
    body = sample(version, "send") | {"id": f"req-{NUL}-1"}

    answer = caller.post("echo", body, version).json()

    assert answer["id"] == "req-\x00-1"
    assert task_of(answer["result"], version)["status"]["state"] in (
        "completed",
        "TASK_STATE_COMPLETED",
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_it_answers_a_lone_surrogate_method_with_invalid_request(
    caller: Caller, echo: Agent, version: str
) -> None:
    body = sample(version, "send") | {"method": f"{METHODS[version]['send']}{SURROGATE}"}

    answer = caller.post("echo", body, version).json()

    error = hub_error(version, -32600, LONE_METHOD, "INVALID_REQUEST")
    assert answer == {"jsonrpc": "2.0", "id": sample(version, "send")["id"], "error": error}
    assert nothing_stored()


@pytest.mark.parametrize("version", VERSIONS)
def test_it_answers_a_method_holding_nul_with_method_not_found(
    caller: Caller, echo: Agent, version: str
) -> None:
    body = sample(version, "send") | {"method": f"{METHODS[version]['send']}{NUL}"}

    error = error_of(caller.post("echo", body, version))

    message = f"Method '{METHODS[version]['send']}\\x00' is not available."
    assert error == hub_error(version, -32601, message, "METHOD_NOT_FOUND")
    assert nothing_stored()


# -- bodies that are not UTF-8 --------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "raw",
    [b"\xff", b"\xe9", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80"],
    ids=["ff", "latin-1", "encoded-surrogate", "overlong", "past-u10ffff"],
)
def test_it_answers_parse_error_for_a_body_that_is_not_utf_8(
    caller: Caller, echo: Agent, version: str, raw: bytes
) -> None:
    body = json.dumps(envelope(version, "send", text="TEXT")).encode().replace(b"TEXT", raw)

    answer = caller.post("echo", body, version).json()

    error = hub_error(version, -32700, NOT_JSON, PARSE_REASON)
    assert answer == {"jsonrpc": "2.0", "id": None, "error": error}
    assert nothing_stored()


@pytest.mark.parametrize("version", VERSIONS)
def test_it_still_takes_a_body_after_a_utf_8_byte_order_mark(
    caller: Caller, echo: Agent, version: str
) -> None:
    body = b"\xef\xbb\xbf" + json.dumps(sample(version, "send")).encode()

    assert result_of(caller.post("echo", body, version))


# -- valid strings round-trip exactly -------------------------------------------------------

# Rare but valid: non-BMP (sent as escaped surrogate pairs), separators, noncharacters, control
# characters other than NUL, and the text `\u0000` (an escaped backslash, then "u0000").
RARE = 'a \U0001f600 \U0010ffff \u2028 \ufffe \uffff \x01 \x1f \x7f \\u0000 \\ud800 "q" é 中'


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("ascii_only", [True, False], ids=["escaped", "utf-8"])
def test_it_keeps_every_valid_string_exactly(
    caller: Caller, json_echo: Agent, version: str, ascii_only: bool
) -> None:
    parts = [text_part(version, RARE), data_part(version, {RARE: [RARE, {"k": RARE}]})]
    message = {"messageId": f"msg-{RARE}", "parts": parts, "metadata": {RARE: RARE}}
    body = json.dumps(envelope(version, "send", message=message), ensure_ascii=ascii_only)

    task = task_of(result_of(caller.post("json-echo", body.encode(), version)), version)
    stored = caller.get("json-echo", version, task["id"])

    sent = stored["history"][0]
    assert (sent["messageId"], sent["parts"], sent["metadata"]) == (
        f"msg-{RARE}",
        parts,
        {RARE: RARE},
    )
    assert task["artifacts"][0]["parts"] == stored["artifacts"][0]["parts"] == parts


# -- versions the hub does not serve ---------------------------------------------------------


@pytest.mark.parametrize("op_version", VERSIONS, ids=["1.0-method", "0.3-method"])
@pytest.mark.parametrize("header", ["9.9", "2.0", "1.1", "0.2"])
def test_it_refuses_a_version_it_does_not_serve_with_the_1_0_error_info(
    caller: Caller, echo: Agent, op_version: str, header: str
) -> None:
    # A client that names a version other than 0.3 is newer than 0.3: the 1.0 shape fits it.
    body = sample(op_version, "send")

    answer = caller.post("echo", body, None, {"A2A-Version": header}).json()

    message = f"A2A version '{header}' is not served here; use one of 0.3, 1.0."
    error = hub_error(V1, -32009, message, "VERSION_NOT_SUPPORTED")
    assert answer == {"jsonrpc": "2.0", "id": body["id"], "error": error}
    assert nothing_stored()


def test_it_refuses_a_version_named_in_the_query_string_the_same_way(
    caller: Caller, echo: Agent
) -> None:
    response = caller.client.post(
        f"{url('echo')}?A2A-Version=9.9",
        data=json.dumps(sample(V1, "send")),
        content_type="application/json",
        headers={"X-API-Key": caller.key or ""},
    )

    message = "A2A version '9.9' is not served here; use one of 0.3, 1.0."
    assert error_of(response) == hub_error(V1, -32009, message, "VERSION_NOT_SUPPORTED")


def test_it_answers_errors_before_the_version_check_in_the_1_0_shape_too(
    caller: Caller, echo: Agent
) -> None:
    answer = caller.post("echo", b"\xff", None, {"A2A-Version": "9.9"}).json()

    error = hub_error(V1, -32700, NOT_JSON, PARSE_REASON)
    assert answer == {"jsonrpc": "2.0", "id": None, "error": error}


# -- every answer is a JSON-RPC envelope ----------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_a_result_no_utf_8_can_carry_becomes_an_internal_error_envelope(version: str) -> None:
    answer = json.loads(rpc_response("req-1", version, {"text": SURROGATE}).content)

    assert (answer["jsonrpc"], answer["id"]) == ("2.0", "req-1")
    assert answer["error"] == internal_error(version, answer["error"]["message"])


async def through_the_app(slug: str, body: bytes, version: str) -> tuple[int, Any]:
    """Status and JSON of the answer the hub's ASGI app (the one servers run) gives."""
    headers = [(b"content-type", b"application/json")]
    if version == V1:
        headers.append((b"a2a-version", V1.encode()))
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": url(slug), "raw_path": b"",
             "query_string": b"", "root_path": "", "headers": headers,
             "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8000)}  # fmt: skip
    communicator = ApplicationCommunicator(application, scope)
    await communicator.send_input({"type": "http.request", "body": body})
    start = await communicator.receive_output(10)
    content = await communicator.receive_output(10)
    await communicator.wait(5)
    await asyncdb.close()
    return start["status"], json.loads(content["body"])


def open_agent(slug: str) -> None:
    make_agent(slug)
    connection.close()  # the thread outlives the test; its connection must not


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("version", VERSIONS)
async def test_the_app_answers_a_lone_surrogate_id_with_a_json_rpc_envelope(
    version: str,
) -> None:
    await sync_to_async(open_agent)("echo")
    body = json.dumps(sample(version, "send") | {"id": SURROGATE}).encode()

    status, answer = await through_the_app("echo", body, version)

    error = hub_error(version, -32600, LONE_ID, "INVALID_REQUEST")
    assert (status, answer) == (200, {"jsonrpc": "2.0", "id": None, "error": error})


@pytest.mark.anyio
@pytest.mark.parametrize("version", VERSIONS)
async def test_the_app_answers_with_a_json_rpc_envelope_when_the_view_itself_fails(
    version: str,
) -> None:
    with mock.patch("protocol.door.agent_named", side_effect=RuntimeError("a bug")):
        status, answer = await through_the_app("echo", b"{}", version)

    assert (status, answer["jsonrpc"], answer["id"]) == (200, "2.0", None)
    assert answer["error"] == internal_error(version, answer["error"]["message"])
