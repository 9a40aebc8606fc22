"""Personas of the registry and the documents they register.

Personas and their rights:
- `owner_key`: a hub-wide API key of `developer`; registers agents and alone (with the
  operator) may renew, change or remove them.
- `rival_key`: another user's hub-wide key; may search and read, never touch the owner's.
- `operator_client` (tests/conftest.py): staff session; may remove anyone's registration.
- anonymous: may search and read live registrations, never register.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from agents.models import ApiKey
from tests.helpers import serving

# Seed 003's registration request, as the seed shows it.
SEED_003: dict[str, Any] = {
    "id": "weather-agent-001",
    "name": "天气助手",
    "description": "提供全球天气查询和预报服务的智能体",
    "version": "1.2.0",
    "capabilities": [
        {
            "name": "weather-query",
            "description": "查询指定城市的当前天气",
            "inputTypes": ["text"],
            "outputTypes": ["text", "json"],
        }
    ],
    "endpoints": [
        {"type": "http", "url": "https://weather-agent.example.com/api", "methods": ["POST"]}
    ],
    "supportedProtocols": ["A2A-1.0"],
    "tags": ["weather", "forecast"],
    "category": "information-service",
}

CARD_V1: dict[str, Any] = {
    "name": "Translator",
    "description": "Translates short texts.",
    "version": "2.0.0",
    "supportedInterfaces": [
        {
            "url": "https://translator.example/a2a",
            "protocolBinding": "JSONRPC",
            "protocolVersion": "1.0",
        }
    ],
    "provider": {"organization": "Words Inc", "url": "https://translator.example"},
    "capabilities": {"streaming": True},
    "defaultInputModes": ["text/plain"],
    "defaultOutputModes": ["text/plain"],
    "skills": [
        {
            "id": "translate",
            "name": "Translate",
            "description": "Into any language.",
            "tags": ["language", "translation"],
        }
    ],
}

CARD_V03: dict[str, Any] = {
    "name": "Summarizer",
    "description": "Summarizes documents.",
    "url": "https://summarizer.example/a2a",
    "version": "0.9.0",
    "protocolVersion": "0.3.0",
    "preferredTransport": "JSONRPC",
    "capabilities": {"streaming": False},
    "defaultInputModes": ["text/plain"],
    "defaultOutputModes": ["text/plain"],
    "skills": [
        {
            "id": "summarize",
            "name": "Summarize",
            "description": "Shortens a text.",
            "tags": ["text", "summary"],
        }
    ],
}


def card(base: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return copy.deepcopy(base) | fields


def bearer(raw: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


@pytest.fixture
def owner_key(developer: User) -> str:
    return ApiKey.issue("registering agent", owner=developer, scopes=["registry"])[1]


@pytest.fixture
def rival_key(db: None) -> str:
    rival = User.objects.create_user("rival", "rival@example.com", "rival-pass-123")
    return ApiKey.issue("rival's agent", owner=rival, scopes=["registry"])[1]


class Registrar:
    """The registry API as a client holding one key sees it."""

    def __init__(self, client: Client, key: str = "") -> None:
        self.client = client
        self.headers = bearer(key) if key else {}

    def register(self, body: Any, query: str = "") -> Any:
        return self.client.post(f"/registry/agents{query}", json.dumps(body),
                                content_type="application/json", **self.headers)  # fmt: skip

    def put(self, agent_id: str, body: Any) -> Any:
        return self.client.put(f"/registry/agents/{agent_id}", json.dumps(body),
                               content_type="application/json", **self.headers)  # fmt: skip

    def heartbeat(self, agent_id: str) -> Any:
        return self.client.post(f"/registry/agents/{agent_id}/heartbeat", **self.headers)

    def get(self, agent_id: str) -> Any:
        return self.client.get(f"/registry/agents/{agent_id}", **self.headers)

    def delete(self, agent_id: str) -> Any:
        return self.client.delete(f"/registry/agents/{agent_id}", **self.headers)

    def search(self, query: str = "") -> Any:
        return self.client.get(f"/registry/agents{query}", **self.headers)


@pytest.fixture
def owner(owner_key: str) -> Registrar:
    return Registrar(Client(), owner_key)


@pytest.fixture
def rival(rival_key: str) -> Registrar:
    return Registrar(Client(), rival_key)


@pytest.fixture
def anonymous(db: None) -> Registrar:
    return Registrar(Client())


class CardServer:
    """A remote agent's card on 127.0.0.1, with an ETag and If-None-Match as servers do."""

    def __init__(self, server: ThreadingHTTPServer) -> None:
        self.server = server
        self.document: dict[str, Any] = copy.deepcopy(CARD_V1)
        self.reads: list[str] = []  # the If-None-Match of each request ("" when none)
        # When set, each request waits for the others of its party and, if they do not come
        # within its timeout, is answered 503.
        self.together: threading.Barrier | None = None

    @property
    def etag(self) -> str:
        return f'"v-{self.document["version"]}"'

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/.well-known/agent-card.json"


@pytest.fixture
def card_server(settings: Any) -> Iterator[CardServer]:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    served = CardServer(server)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked = self.headers.get("If-None-Match", "")
            served.reads.append(asked)
            if served.together is not None:
                try:
                    served.together.wait()
                except threading.BrokenBarrierError:
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
            if asked == served.etag:
                self.send_response(304)
                self.end_headers()
                return
            body = json.dumps(served.document).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("ETag", served.etag)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server.RequestHandlerClass = Handler
    with serving(server):
        yield served
