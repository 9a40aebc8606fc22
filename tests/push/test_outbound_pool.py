"""The delivery engine's connection pool keeps the outbound guard: it refuses private
addresses, given literally or by a name that resolves to one (checked when a connection is
opened), reaches allow-listed hosts, and never follows a redirect."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

from a2ahub import outbound
from a2ahub.outbound_pool import ANSWER_BYTES_READ, OutboundPool
from tests.push.receiver import Behaviour, Receiver

T = TypeVar("T")


def posted(url: str, **extra: Any) -> outbound.Response:
    """One POST through a fresh pool, as the engine makes it."""

    async def post() -> outbound.Response:
        pool = OutboundPool(limit=4)
        try:
            return await pool.post(url, content=b"{}", headers={}, timeout=5, **extra)
        finally:
            await pool.close()

    return run(post())


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


@pytest.fixture
def receiver() -> Any:
    running = Receiver()
    yield running
    running.down()


def test_it_refuses_a_loopback_address_not_allow_listed(receiver: Receiver, settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = []

    with pytest.raises(outbound.UnsafeURL, match="loopback"):
        posted(receiver.url)

    assert receiver.requests == []


@pytest.mark.parametrize("address", ["10.0.0.7", "169.254.169.254", "192.168.1.1", "[::1]"])
def test_it_refuses_private_and_link_local_addresses(address: str, settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = []

    with pytest.raises(outbound.UnsafeURL):
        posted(f"http://{address}/hook")


def test_it_refuses_a_name_that_resolves_to_loopback(receiver: Receiver, settings: Any) -> None:
    # A name passes `check_target` (no lookup there); what it resolves to is checked when a
    # connection is opened.
    settings.OUTBOUND_ALLOWED_HOSTS = []

    with pytest.raises(outbound.UnsafeURL, match=re.escape("localhost resolves to 127.0.0.1")):
        posted(f"http://localhost:{receiver.port}/webhook")

    assert receiver.requests == []


def test_it_refuses_a_name_with_any_private_answer(
    receiver: Receiver, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A name whose lookup gives a public address and a private one (DNS rebinding's setup).
    settings.OUTBOUND_ALLOWED_HOSTS = []
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["93.184.216.34", "10.0.0.7"])

    with pytest.raises(outbound.UnsafeURL, match=re.escape("resolves to 10.0.0.7")):
        posted("http://receiver.example.com/hook")


def test_it_reaches_an_allow_listed_host(receiver: Receiver, settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]

    response = posted(receiver.url)

    assert response.status_code == 200
    (got,) = receiver.requests
    assert got.body == b"{}"
    assert got.header("User-Agent") == outbound.USER_AGENT


def test_it_does_not_follow_a_redirect(receiver: Receiver, settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    redirecting = Receiver(
        Behaviour(fail_first=1, fail_status=307, fail_headers={"Location": receiver.url})
    )
    try:
        response = posted(redirecting.url)
    finally:
        redirecting.down()

    assert response.status_code == 307
    assert len(redirecting.requests) == 1
    assert receiver.requests == [], "the redirect was followed"


def test_only_the_start_of_a_long_answer_is_read(settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    long = Receiver(Behaviour(answer_body=b"x" * 5_000_000))
    try:
        response = posted(long.url)
    finally:
        long.down()

    assert response.status_code == 200
    assert response.content == b"x" * ANSWER_BYTES_READ
