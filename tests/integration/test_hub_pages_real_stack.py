"""The hub's shared pages as its web processes serve them in production (daphne, DEBUG off,
static files served by the process itself), on the real stack: the branded 404 with the
pages' security headers, /favicon.ico leading to an icon that answers, and the registry's
docs page whose start-up script and Swagger UI files all come from the hub."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.integration.stack import Hub

pytestmark = pytest.mark.integration


def test_a_missing_page_is_the_hubs_404_with_the_security_headers(hub: Hub) -> None:
    response = httpx.get(f"{hub.web_a}/no/such/page/")
    assert response.status_code == 404
    assert "<title>Page not found · A2A Hub</title>" in response.text
    assert 'href="/"' in response.text
    assert "script-src 'self'" in response.headers["content-security-policy"]


def test_favicon_ico_leads_to_an_icon_the_web_process_serves(hub: Hub) -> None:
    response = httpx.get(f"{hub.web_b}/favicon.ico", follow_redirects=True)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("image/svg+xml")


def test_the_registry_docs_load_only_the_hubs_own_files(hub: Hub) -> None:
    page = httpx.get(f"{hub.web_a}/registry/docs/")
    assert page.status_code == 200
    assert "<title>The agent registry · A2A Hub</title>" in page.text
    links = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert links and all(link.startswith("/") for link in links), links
    # What the page loads (scripts, styles, the icon) answers from the same process.
    loaded = re.findall(r'src="([^"]+)"', page.text) + [
        link for link in links if link.startswith("/static/")
    ]
    assert "/registry/docs/?script=" in loaded
    for src in loaded:
        assert httpx.get(f"{hub.web_a}{src}").status_code == 200, src
