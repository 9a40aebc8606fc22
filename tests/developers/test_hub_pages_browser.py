"""The hub's shared pages in a real browser: the branded 404 and its way back, the API docs
(Swagger UI from the hub's own files) for the operators' API and the registry, the icon on
every page (no 404 for it anywhere), the registration page that only shows, and the inbox's
whole URL. Screenshots at 1280 and 1400 px go to `A2AHUB_SCREENSHOTS` (or the test's
temporary folder).

Personas: anonymous; `dev` (tests/browser.py's sign-in), not staff; `op`, staff.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from playwright.sync_api import Page, Response, expect

from push.models import WebhookInbox
from registry.models import Registration, Source
from tests.browser import chromium, screenshot, sign_in
from tests.factories.agents import make_agent

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "operator-pass-123"
WIDTHS = (1280, 1400)


def watch_for_missing(page: Page) -> list[str]:
    """Every URL the page loads that answers 404, except the page itself when asked for."""
    missing: list[str] = []

    def seen(response: Response) -> None:
        if response.status == 404 and response.request.resource_type != "document":
            missing.append(response.url)

    page.on("response", seen)
    return missing


def assert_icon_answers(page: Page) -> None:
    """The page names the hub's icon, and both it and /favicon.ico answer."""
    statuses = page.evaluate(
        """async () => {
            const named = document.querySelector('link[rel=icon]');
            const icon = named ? (await fetch(named.href)).status : 'none';
            return [icon, (await fetch('/favicon.ico')).status];
        }"""
    )
    assert statuses == [200, 200], (page.url, statuses)


def operator_signs_in(page: Page, base: str) -> None:
    page.goto(f"{base}/admin/login/?next=/admin/")
    page.fill("#id_username", "op")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    expect(page.locator("#site-name")).to_contain_text("A2A Hub")


def test_a_missing_page_is_branded_and_leads_back(live_server: Any, tmp_path: Path) -> None:
    User.objects.create_user("dev", "dev@example.com", "developer-pass-123")
    make_agent("listed", public=True)
    with chromium() as browser:
        for width in WIDTHS:
            page = browser.new_page(viewport={"width": width, "height": 800})
            missing = watch_for_missing(page)
            answer = page.goto(f"{live_server.url}/no/such/page/")
            assert answer is not None and answer.status == 404
            expect(page.locator("h1")).to_have_text("Page not found")
            expect(page.locator(".site-header .brand")).to_contain_text("A2A Hub")
            assert_icon_answers(page)
            screenshot(page, f"not-found-{width}", tmp_path)
            page.click("text=Home: the agents hosted here")
            expect(page.locator("h1")).to_have_text("Agents hosted here")
            sign_in(page, live_server.url)
            assert_icon_answers(page)
            screenshot(page, f"developer-agents-{width}", tmp_path)
            page.goto(f"{live_server.url}/dev/agents/not-mine/")
            page.click("text=My agents >> nth=-1")
            expect(page.locator("h1")).to_have_text("My agents")
            assert missing == []
            page.close()


def assert_readable_docs(page: Page, title: str) -> None:
    expect(page).to_have_title(f"{title} · A2A Hub")
    expect(page.locator("h1.hub-docs-title")).to_have_text(title)
    expect(page.locator(".swagger-ui .info .title")).to_be_visible()
    expect(page.locator(".swagger-ui .opblock").first).to_be_visible()
    tallest_pre = page.evaluate(
        "() => Math.max(0, ...[...document.querySelectorAll('pre')].map((p) => p.offsetHeight))"
    )
    assert tallest_pre < 600, tallest_pre
    assert page.evaluate("() => document.documentElement.scrollHeight") < 8000


def test_the_api_docs_are_readable_pages_from_the_hubs_own_files(
    live_server: Any, tmp_path: Path
) -> None:
    User.objects.create_superuser("op", "op@example.com", PASSWORD)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        loaded: list[str] = []
        page.on("request", lambda request: loaded.append(request.url))
        missing = watch_for_missing(page)
        page.goto(f"{live_server.url}/registry/docs/")
        assert_readable_docs(page, "The agent registry")
        expect(page.locator(".swagger-ui")).to_contain_text("/registry/agents")
        assert_icon_answers(page)
        screenshot(page, "registry-docs-1280", tmp_path)

        operator_signs_in(page, live_server.url)
        page.goto(f"{live_server.url}/api/docs/")
        assert_readable_docs(page, "The operators' API")
        expect(page.locator(".swagger-ui")).to_contain_text("/api/tasks/{id}/cancel")
        screenshot(page, "api-docs-1280", tmp_path)
        assert missing == []
        assert all(url.startswith(live_server.url) for url in loaded), loaded


def test_a_registration_is_a_page_to_read_and_the_inbox_url_is_whole(
    live_server: Any, tmp_path: Path
) -> None:
    operator = User.objects.create_superuser("op", "op@example.com", PASSWORD)
    registration = Registration.objects.create(
        agent=make_agent("registered"), registration_id="reg-1", owner_principal="apikey:42",
        source=Source.CARD_URL, ttl_seconds=3600, expires_at=timezone.now() + timedelta(hours=1),
    )  # fmt: skip
    inbox = WebhookInbox.objects.create(name="receiver", owner=operator)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        missing = watch_for_missing(page)
        operator_signs_in(page, live_server.url)
        assert_icon_answers(page)
        page.goto(f"{live_server.url}/admin/registry/registration/{registration.pk}/change/")
        expect(page.locator("#content h1")).to_have_text("View registration")
        screenshot(page, "admin-registration-view-1280", tmp_path)
        saves = page.locator("input[name=_save], input[name=_continue], input[name=_addanother]")
        expect(saves).to_have_count(0)

        page.goto(f"{live_server.url}/admin/push/webhookinbox/")
        whole = f"{live_server.url}/push/inbox/{inbox.token}/"
        expect(page.locator("td.field-inbox_url_column code")).to_have_attribute("title", whole)
        page.goto(f"{live_server.url}/admin/push/webhookinbox/{inbox.pk}/change/")
        expect(page.locator(".field-inbox_url .readonly")).to_have_text(whole)
        screenshot(page, "admin-inbox-1280", tmp_path)
        assert missing == []
