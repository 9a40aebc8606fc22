"""Both outbound clients answer to one guard: the webhook pool (aiohttp, `a2ahub.outbound_pool`)
and the general client (httpx, `a2ahub.outbound`) refuse the same hostile URLs with the same
error, whether the URL is refused before connecting or when its name is looked up. A real
server on 127.0.0.1 stands in for the hub (and for any local service); nothing reaches it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from http.server import ThreadingHTTPServer

import pytest
from asgiref.sync import async_to_sync
from pytest_django.fixtures import Settings

from a2ahub import outbound
from a2ahub.outbound_pool import OutboundPool
from tests.helpers import serving
from tests.test_outbound_hub import Counter

post = async_to_sync(outbound.async_post)  # from a test's thread, not a loop

INBOX = ("/push/inbox/",)

# {hub}: the hub's port. Names under .test resolve to `RESOLVED` (below), as DNS would.
HOSTILE = [
    "http://127.0.0.1:{hub}/registry/agents",
    "http://127.0.0.1:9/",
    "http://2130706433:9/",
    "http://0x7f.1:9/",
    "http://127.1:9/",
    "http://017700000001:9/",
    "http://10.0.0.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::1]:9/",
    "http://[::ffff:127.0.0.1]/",
    "http://[fe80::1]/",
    "http://127.0.0.%31/",
    "ftp://example.com/",
    "https://user:pw@example.com/",
    "http:///path",
    "http://localhost:{hub}/metrics",
    "http://localhost:{hub}/push/inbox/../../metrics",
    "http://localhost:{hub}/push/inbox/%2e%2e/registry/agents",
    "http://private.example.test/hook",
    "http://alias.example.test:{hub}/push/inbox/t/",
]
RESOLVED = {"private.example.test": ["93.184.216.34", "10.0.0.7"]}


@pytest.fixture
def hub(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """A server on the hub's configured port; nothing is allow-listed, as in production."""
    Counter.seen = []
    settings.PUBLIC_BASE_URL = ""
    settings.OUTBOUND_ALLOWED_HOSTS = []
    real = outbound.resolve
    monkeypatch.setattr(
        outbound, "resolve", lambda host, port: RESOLVED.get(host) or real(host, port)
    )
    RESOLVED["alias.example.test"] = ["127.0.0.1"]
    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Counter)) as server:
        settings.HOST, settings.PORT = "127.0.0.1", server.server_address[1]
        yield settings.PORT
    outbound.forget_own_origins()


async def webhook_client(url: str) -> None:
    pool = OutboundPool(limit=4, hub_paths=INBOX)
    try:
        await pool.post(url, content=b"{}", headers={}, timeout=5)
    finally:
        await pool.close()


def general_client(url: str) -> None:
    post(url, content=b"{}", headers={}, timeout=5, hub_paths=INBOX)


def refusal(call: object) -> str:
    with pytest.raises(outbound.UnsafeURL) as refused:
        call()  # type: ignore[operator]
    return str(refused.value)


@pytest.mark.parametrize("template", HOSTILE)
def test_both_clients_refuse_each_hostile_url_with_the_same_error(hub: int, template: str) -> None:
    url = template.format(hub=hub)

    by_webhooks = refusal(lambda: asyncio.run(webhook_client(url)))
    by_everything_else = refusal(lambda: general_client(url))

    assert by_webhooks == by_everything_else
    assert Counter.seen == []


def test_both_clients_reach_the_hubs_inbox_by_its_own_name(hub: int) -> None:
    url = f"http://localhost:{hub}/push/inbox/t/"

    asyncio.run(webhook_client(url))
    general_client(url)

    assert Counter.seen == ["/push/inbox/t/", "/push/inbox/t/"]
