"""The ASGI application refuses a body over its URL's limit before it reads it: a declared
`Content-Length` over the limit is a 413 at once, and a body that arrives in chunks is a 413
once it passes the limit, on the site's URLs (Django's `DATA_UPLOAD_MAX_MEMORY_SIZE`), at
the A2A doors (`A2A_MAX_REQUEST_BYTES`, answered in the binding's own shape) and at the
registry (`REGISTRY_MAX_BODY_BYTES`, in its error shape). The web server's
own refusal, before the application runs, is tested against a real daphne process in
tests/integration/test_door_refusals.py; the large-body thread in `test_big_bodies`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.testing import ApplicationCommunicator
from pytest_django.fixtures import Settings

from a2ahub.asgi import application
from a2ahub.body_limit import limit_at

pytestmark = pytest.mark.anyio

DECLARED = str(600 * 1024 * 1024)


def scope(path: str, **headers: str) -> dict[str, Any]:
    raw = {"content-type": "application/json", "a2a-version": "1.0", **headers}
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "headers": [(k.encode(), v.encode()) for k, v in raw.items()],
        "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8000),
    }  # fmt: skip


async def answer(communicator: ApplicationCommunicator) -> tuple[int, dict[str, Any]]:
    start = await communicator.receive_output(5)
    body = await communicator.receive_output(5)
    await communicator.wait(5)
    return start["status"], json.loads(body["body"])


async def test_a_site_url_refuses_a_declared_body_over_its_limit_without_reading_it() -> None:
    # No body is ever sent: an application that waited for it would time out.
    communicator = ApplicationCommunicator(
        application, scope("/admin/login/", **{"content-length": DECLARED})
    )

    status, body = await answer(communicator)

    assert status == 413
    assert body["error"]["message"] == "The request body is over 10485760 bytes."


async def test_a_site_url_stops_reading_a_body_once_past_its_limit(settings: Settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    communicator = ApplicationCommunicator(application, scope("/admin/login/"))
    await communicator.send_input({"type": "http.request", "body": b"x" * 600, "more_body": True})
    await communicator.send_input({"type": "http.request", "body": b"x" * 600, "more_body": True})

    status, body = await answer(communicator)

    assert status == 413
    assert body == {"error": {"code": 413, "status": "INVALID_ARGUMENT",
                              "message": "The request body is over 1024 bytes."}}  # fmt: skip


async def test_a_jsonrpc_door_refuses_a_declared_body_over_its_limit_in_its_shape() -> None:
    communicator = ApplicationCommunicator(
        application, scope("/agents/echo/jsonrpc/", **{"content-length": DECLARED})
    )

    status, body = await answer(communicator)

    assert status == 413
    assert body["error"]["code"] == -32600
    assert body["error"]["message"] == "The request body is over 10485760 bytes."


async def test_an_http_json_door_refuses_a_declared_body_over_its_limit_in_its_shape() -> None:
    communicator = ApplicationCommunicator(
        application, scope("/agents/echo/rest/message:send", **{"content-length": DECLARED})
    )

    status, body = await answer(communicator)

    assert status == 413
    assert body["error"]["code"] == 413
    assert body["error"]["details"][0]["reason"] == "INVALID_REQUEST"


async def test_the_registry_refuses_a_declared_body_over_its_own_limit_in_its_shape() -> None:
    communicator = ApplicationCommunicator(
        application, scope("/registry/agents", **{"content-length": DECLARED})
    )

    status, body = await answer(communicator)

    assert status == 413
    assert body == {"error": {"code": 413, "status": "PAYLOAD_TOO_LARGE", "field": "body",
                              "message": "The request body is over 524288 bytes."}}  # fmt: skip


@pytest.mark.parametrize(
    ("path", "setting"),
    [("/a2a/jsonrpc/", "A2A_MAX_REQUEST_BYTES"), ("/admin/login/", "DATA_UPLOAD_MAX_MEMORY_SIZE"),
     ("/registry/agents", "REGISTRY_MAX_BODY_BYTES")],
)  # fmt: skip
def test_each_url_has_its_own_limit(settings: Settings, path: str, setting: str) -> None:
    settings.A2A_MAX_REQUEST_BYTES, settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2000, 3000
    settings.REGISTRY_MAX_BODY_BYTES = 4000

    assert limit_at(scope(path)).size == getattr(settings, setting)
