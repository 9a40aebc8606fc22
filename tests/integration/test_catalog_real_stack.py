"""The AI Catalog on the distributed hub: read from one web process, it verifies against the
JWKS another serves (the signing key lives in PostgreSQL), lists the demo agents under the
hub's `urn:air` names, and a changed catalog no longer verifies."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
import pytest
from jwcrypto.jws import InvalidJWSSignature

from tests.integration.stack import Hub
from tests.registry.catalogs import verified

pytestmark = pytest.mark.integration


def test_the_catalog_read_from_one_process_verifies_with_the_others_keys(hub: Hub) -> None:
    response = httpx.get(f"{hub.web_a}/.well-known/ai-catalog.json", timeout=10)
    document = response.json()
    jwks = httpx.get(f"{hub.web_b}/.well-known/jwks.json", timeout=10).json()
    host = urlsplit(hub.web_a).hostname

    header = verified(document, jwks)

    assert response.headers["content-type"] == "application/ai-catalog+json"
    assert header["kid"] in {key["kid"] for key in jwks["keys"]}
    assert f"urn:air:{host}:a2a:echo" in [entry["identifier"] for entry in document["entries"]]
    assert {entry["type"] for entry in document["entries"]} == {
        "application/a2a-agent-card+json",
        "application/mcp-server-card+json",
    }
    with pytest.raises(InvalidJWSSignature):
        verified(document | {"entries": document["entries"][1:]}, jwks)
