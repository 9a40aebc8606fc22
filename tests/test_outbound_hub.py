"""The hub itself as an outbound target: no call reaches the hub's own doors unless its caller
names the paths it may reach (the push inbox, the orchestrator), whatever spelling the URL
uses for the hub's host, and a name that resolves to the hub's address is refused when the
connection opens. Paths on the hub are judged as its router reads them. Real servers run on
127.0.0.1, standing in for the hub on its configured port."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from asgiref.sync import async_to_sync
from pytest_django.fixtures import Settings

from a2ahub import outbound
from a2ahub.outbound_pool import OutboundPool
from tests.helpers import serving

post = async_to_sync(outbound.async_post)  # from a test's thread, not a loop

SELF = "points at this hub itself"


class Counter(BaseHTTPRequestHandler):
    """A server that answers 200 to everything and remembers each path it was asked for."""

    seen: list[str] = []

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.seen.append(self.path)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST


@pytest.fixture
def hub_port(settings: Settings) -> Iterator[int]:
    """A server on the port the hub is configured with (HOST 127.0.0.1): for the guard, the
    hub itself. Loopback is allow-listed, as in development: the hub is refused all the same."""
    Counter.seen = []
    settings.PUBLIC_BASE_URL = ""
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1", "localhost", "::1"]
    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Counter)) as server:
        settings.HOST, settings.PORT = "127.0.0.1", server.server_address[1]
        yield settings.PORT
    outbound.forget_own_origins()


@pytest.mark.parametrize(
    "spelling",
    ["127.0.0.1", "localhost", "LocalHost.", "[::1]", "2130706433", "0x7f.1", "127.1"],
)
def test_every_spelling_of_the_hubs_own_address_is_refused(hub_port: int, spelling: str) -> None:
    url = f"http://{spelling}:{hub_port}/agents/echo/.well-known/agent-card.json"

    with pytest.raises(outbound.UnsafeURL, match=SELF):
        outbound.check_url(url)
    with pytest.raises(outbound.UnsafeURL, match=SELF):
        outbound.get(url)
    assert Counter.seen == []


def test_the_public_base_url_is_the_hub_too(settings: Settings) -> None:
    settings.PUBLIC_BASE_URL = "https://hub.example"

    with pytest.raises(outbound.UnsafeURL, match=SELF):
        outbound.check_url("https://HUB.example:443/agents/echo/jsonrpc/")
    outbound.check_url("https://other.example/agents/echo/jsonrpc/", allow_unresolved=True)


def test_another_port_on_the_same_host_is_not_the_hub(hub_port: int) -> None:
    outbound.check_url(f"http://127.0.0.1:{hub_port + 1}/card.json")


def test_the_hubs_grpc_server_is_the_hub_on_every_path(hub_port: int, settings: Settings) -> None:
    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Counter)) as grpc:
        settings.GRPC_PORT = grpc.server_address[1]
        url = f"http://localhost:{settings.GRPC_PORT}/push/inbox/t/"

        for hub_paths in [(), ("/push/inbox/",)]:
            with pytest.raises(outbound.UnsafeURL, match=SELF):
                outbound.check_url(url, hub_paths=hub_paths)
            with pytest.raises(outbound.UnsafeURL, match=SELF):
                post(url, content=b"", headers={}, hub_paths=hub_paths)
            with pytest.raises(outbound.UnsafeURL, match=SELF):
                asyncio.run(pool_post(url, hub_paths))
        settings.GRPC_PORT = 0
        assert post(url, content=b"", headers={}).is_success
    assert Counter.seen == ["/push/inbox/t/"]


def test_a_name_resolving_to_the_hubs_address_is_refused_when_connecting(
    hub_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["127.0.0.1"])
    url = f"http://alias.example.test:{hub_port}/agents/echo/jsonrpc/"

    with pytest.raises(outbound.UnsafeURL, match=re.escape("where this hub itself listens")):
        asyncio.run(outbound.async_post(url, content=b"{}", headers={}))
    with pytest.raises(outbound.UnsafeURL, match=re.escape("where this hub itself listens")):
        outbound.check_url(url)
    assert Counter.seen == []


def test_a_caller_reaches_only_the_paths_of_the_hub_it_names(hub_port: int) -> None:
    base = f"http://localhost:{hub_port}"
    inbox = ("/push/inbox/",)

    assert post(f"{base}/push/inbox/t/", content=b"", headers={}, hub_paths=inbox).is_success
    with pytest.raises(outbound.UnsafeURL, match="only /push/inbox/ may be reached"):
        post(f"{base}/registry/agents", content=b"", headers={}, hub_paths=inbox)
    assert Counter.seen == ["/push/inbox/t/"]


@pytest.mark.parametrize(
    "path",
    [
        "/push/inbox/../../registry/agents",
        "/push/inbox/%2e%2e/%2E%2E/registry/agents",
        "/push/inbox/t/.%2e/../../metrics",
        "/push/inbox/t/..%2f..%2f..%2fmetrics",
        "/push/inbox/./../metrics",
        "/push/inbox/t/..\\..\\..\\metrics",
    ],
)
def test_dot_segments_in_any_spelling_never_leave_the_allowed_path(
    hub_port: int, path: str
) -> None:
    url = f"http://localhost:{hub_port}{path}"

    with pytest.raises(outbound.UnsafeURL, match="dot segment"):
        post(url, content=b"", headers={}, hub_paths=("/push/inbox/",))
    with pytest.raises(outbound.UnsafeURL, match="dot segment"):
        asyncio.run(pool_post(url, ("/push/inbox/",)))
    assert Counter.seen == []


async def pool_post(url: str, hub_paths: tuple[str, ...] = ()) -> outbound.Response:
    pool = OutboundPool(limit=4, hub_paths=hub_paths)
    try:
        return await pool.post(url, content=b"{}", headers={}, timeout=5)
    finally:
        await pool.close()


def test_the_webhook_pool_reaches_the_inbox_of_the_hub_and_nothing_else(hub_port: int) -> None:
    inbox = ("/push/inbox/",)

    assert asyncio.run(pool_post(f"http://localhost:{hub_port}/push/inbox/t/", inbox)).is_success
    with pytest.raises(outbound.UnsafeURL, match="only /push/inbox/ may be reached"):
        asyncio.run(pool_post(f"http://localhost:{hub_port}/metrics", inbox))
    with pytest.raises(outbound.UnsafeURL, match=SELF):
        asyncio.run(pool_post(f"http://127.0.0.1:{hub_port}/push/inbox/t/"))
    assert Counter.seen == ["/push/inbox/t/"]


@pytest.mark.parametrize("host", ["2130706433", "017700000001", "0x7f000001", "127.1"])
def test_the_pool_judges_numeric_hosts_as_the_address_they_connect_to(
    settings: Settings, host: str
) -> None:
    # aiohttp never asks a resolver about a host that looks like an address.
    settings.OUTBOUND_ALLOWED_HOSTS = []
    Counter.seen = []
    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Counter)) as server:
        url = f"http://{host}:{server.server_address[1]}/webhook"
        with pytest.raises(outbound.UnsafeURL, match="a loopback address"):
            asyncio.run(pool_post(url))
    assert Counter.seen == []


@pytest.mark.parametrize("host", ["127.0.0.%31", "local%68ost", "[::1%25lo]"])
def test_a_percent_encoded_host_is_refused(hub_port: int, host: str) -> None:
    with pytest.raises(outbound.UnsafeURL):
        outbound.check_url(f"http://{host}:{hub_port}/", allow_unresolved=True)
    with pytest.raises(outbound.UnsafeURL):
        asyncio.run(pool_post(f"http://{host}:{hub_port}/push/inbox/t/", ("/push/inbox/",)))
    assert Counter.seen == []
