"""Cards signed as a publisher signs them (the official SDK's signer, ES256), the keys that
sign them, and a 127.0.0.1 site that serves cards and JWKS documents at any path."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from a2a.client.card_resolver import parse_agent_card
from a2a.utils.signing import ProtectedHeader, create_agent_card_signer
from google.protobuf.json_format import MessageToDict
from jwcrypto import jwk

from tests.helpers import serving


@dataclass(frozen=True)
class PublisherKey:
    kid: str
    private_pem: str
    public: dict[str, Any]

    @property
    def jwks(self) -> dict[str, Any]:
        return {"keys": [self.public]}


def make_key(kid: str) -> PublisherKey:
    private = jwk.JWK.generate(kty="EC", crv="P-256")
    public = json.loads(private.export_public()) | {"kid": kid, "use": "sig", "alg": "ES256"}
    pem = private.export_to_pem(private_key=True, password=None).decode()
    return PublisherKey(kid, pem, public)


def signed(document: dict[str, Any], key: PublisherKey, jku: str | None = None) -> dict[str, Any]:
    """`document` (a 1.0 card) with a signature by `key` added, as its publisher serves it."""
    header: ProtectedHeader = {"alg": "ES256", "kid": key.kid, "jku": jku, "typ": "JOSE"}
    if jku is None:
        del header["jku"]  # type: ignore[misc]
    card = parse_agent_card(copy.deepcopy(document))
    signature = create_agent_card_signer(key.private_pem, header)(card).signatures[-1]
    return copy.deepcopy(document) | {"signatures": [MessageToDict(signature)]}


def tampered(document: dict[str, Any]) -> dict[str, Any]:
    """A signed card changed after signing (its signature kept)."""
    return copy.deepcopy(document) | {"description": document["description"] + " And more."}


class Site:
    """What a 127.0.0.1 origin serves: path -> JSON document; anything else is a 404. `asked`
    lists the paths requested, in order."""

    def __init__(self, server: ThreadingHTTPServer) -> None:
        self.server = server
        self.pages: dict[str, Any] = {}
        self.asked: list[str] = []

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def url(self, path: str) -> str:
        return self.origin + path

    def serve(self, path: str, document: Any) -> str:
        self.pages[path] = document
        return self.url(path)


@contextmanager
def site() -> Iterator[Site]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    served = Site(server)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            served.asked.append(self.path)
            found = self.path in served.pages
            body = json.dumps(served.pages[self.path]).encode() if found else b""
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server.RequestHandlerClass = Handler
    with serving(server):
        yield served


# The publisher of the cards the signature tests check, and a key no one trusts.
PUBLISHER = make_key("publisher-1")
STRANGER = make_key("stranger-1")


@contextmanager
def publishing(settings: Any, jwks: bool = True) -> Iterator[Site]:
    """The publisher's site (its JWKS served at its origin's well-known path, when `jwks`),
    which the hub may call, trusting no key of its own configuration."""
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.TRUSTED_CARD_KEYS = []
    with site() as served:
        if jwks:
            served.serve("/.well-known/jwks.json", PUBLISHER.jwks)
        yield served
