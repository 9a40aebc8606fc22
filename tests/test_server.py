"""The hub as a user starts it: a real server process answering over HTTP."""

from __future__ import annotations

import asyncio
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import grpc
import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import SendMessageRequest, TaskState

from a2ahub.daphne import LISTEN_BACKLOG
from tests.factories.messages import user_message
from tests.helpers import ROOT, embedded_env, free_port, manage, wait_for_http, wait_for_port


@pytest.fixture(scope="module")
def running_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    # One hub for the module: each start migrates, seeds and serves in three processes, and
    # none of these tests changes what another reads.
    env = embedded_env(tmp_path_factory.mktemp("hub"))
    manage("migrate", "--noinput", env=env)
    seeded = manage("seed_demo", env=env).stdout
    password = re.search(r"password '([^']+)'", seeded)
    assert password is not None
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "manage.py", "runhub", "--port", str(port)], cwd=ROOT, env=env
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(f"{base}/.well-known/agent-card.json", process)
        yield base, password.group(1)
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_served_echo_card_is_read_by_the_official_resolver(
    running_hub: tuple[str, str],
) -> None:
    base, _ = running_hub

    async def resolve() -> object:
        async with httpx.AsyncClient() as http:
            return await A2ACardResolver(http, f"{base}/agents/echo").get_agent_card()

    card = asyncio.run(resolve())
    interfaces = card.supported_interfaces  # type: ignore[attr-defined]
    jsonrpc = [i for i in interfaces if i.protocol_binding == "JSONRPC"]
    assert jsonrpc[0].url == f"{base}/agents/echo/jsonrpc/"
    assert card.name == "Echo"  # type: ignore[attr-defined]


def test_the_embedded_hub_serves_grpc_inside_its_web_process(
    running_hub: tuple[str, str],
) -> None:
    """Embedded, the one web process serves gRPC too: a stream of a turn it runs needs its
    in-memory events. The official client finds the service on the card."""
    base, _ = running_hub

    async def scenario() -> list[Any]:
        async with httpx.AsyncClient() as http:
            card = await A2ACardResolver(http, f"{base}/agents/echo").get_agent_card()
        # The 1.0 service (the default agent's card also lists the 0.3 one, without a tenant).
        listed = [
            i
            for i in card.supported_interfaces
            if i.protocol_binding == "GRPC" and i.protocol_version == "1.0"
        ]
        assert [(i.url.rsplit(":", 1)[0], i.tenant) for i in listed] == [("127.0.0.1", "echo")]
        wait_for_port(listed[0].url)
        config = ClientConfig(supported_protocol_bindings=["GRPC"], streaming=True,
                              grpc_channel_factory=grpc.aio.insecure_channel)  # fmt: skip
        client = ClientFactory(config).create(card)
        try:
            request = SendMessageRequest(message=user_message("embedded gRPC"))
            return [event async for event in client.send_message(request)]
        finally:
            await client.close()

    events = asyncio.run(scenario())
    assert events[0].WhichOneof("payload") == "task"
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED


def test_the_operator_signs_in_to_the_admin(running_hub: tuple[str, str]) -> None:
    base, password = running_hub
    with httpx.Client(base_url=base, follow_redirects=True, timeout=30) as http:
        login = http.get("/admin/login/")
        token = http.cookies["csrftoken"]
        page = http.post(
            "/admin/login/?next=/admin/",
            data={"username": "operator", "password": password, "csrfmiddlewaretoken": token},
            headers={"Referer": str(login.url)},
        )
        assert "A2A Hub dashboard" in page.text
        assert "Agents" in page.text
        assert http.get("/static/admin/css/base.css").status_code == 200


def websocket_handshake(base: str, path: str) -> str:
    """The status line a WebSocket opening handshake gets (a raw socket: no client library)."""
    host, port = base.removeprefix("http://").split(":")
    request = (
        f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
        "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        f"Sec-WebSocket-Version: 13\r\nOrigin: {base}\r\n\r\n"
    )
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request.encode())
        return sock.recv(4096).split(b"\r\n", 1)[0].decode()


def test_a_websocket_to_a_path_without_a_page_is_refused_and_the_hub_serves_on(
    running_hub: tuple[str, str],
) -> None:
    base, _ = running_hub

    assert websocket_handshake(base, "/ws/nothing-here/").startswith("HTTP/1.1 403 ")
    assert httpx.get(f"{base}/agents/echo/.well-known/agent-card.json").status_code == 200


@pytest.mark.skipif(shutil.which("ss") is None, reason="reads the backlog with iproute2's ss")
def test_the_web_process_queues_a_crowd_of_new_connections(running_hub: tuple[str, str]) -> None:
    # When a web process dies, every stream it held re-attaches elsewhere at once; past
    # Twisted's own queue of 50 the kernel dropped connections, which then failed.
    base, _ = running_hub
    port = urlsplit(base).port
    listening = subprocess.run(
        ["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True, check=True
    ).stdout.split()

    somaxconn = int(Path("/proc/sys/net/core/somaxconn").read_text())
    assert int(listening[2]) == min(LISTEN_BACKLOG, somaxconn)  # a listener's Send-Q: its backlog
