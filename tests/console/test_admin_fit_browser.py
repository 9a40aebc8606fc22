"""The admin fits a 1280 px screen, in a real browser: every list and the dashboard, seeded
with long texts (errors, URLs, names, audit values), have no table wider than the window and
no content that scrolls sideways; the side menu starts collapsed; a shortened cell keeps its
whole text for the pointer (its title); the deliveries' "last error" column is on screen.

Each page is saved as a screenshot: in `A2AHUB_SCREENSHOTS` when set, else in the test's
temporary directory (`pytest -s` prints the path).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from playwright.sync_api import Page, expect

from agents.models import AccessChange, AccessVia, ApiKey, CredentialKind, CredentialUse
from push.models import Delivery, DeliveryState, PushNotificationConfig, WebhookInbox
from registry.models import Health, Registration, Source
from tests.browser import chromium, screenshot, sign_in_admin
from tests.factories.agents import make_agent
from tests.factories.oauth import machine, token_for
from tests.factories.tasks import ended, open_task

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "operator-pass-123"
LONG_ERROR = (
    "The receiver answered 503 Service Unavailable: upstream connect error or disconnect/reset "
    "before headers. reset reason: connection failure, transport failure reason: delayed "
    "connect error: 111 " * 3
)
LONG_URL = "https://receiver.example.com/" + "very-long-path-segment/" * 12 + "hook"
LISTS = [
    "/admin/tasks/task/",
    "/admin/agents/agent/",
    "/admin/agents/apikey/",
    "/admin/agents/credentialuse/",
    "/admin/agents/accesschange/",
    "/admin/push/pushnotificationconfig/",
    "/admin/push/delivery/",
    "/admin/push/webhookinbox/",
    "/admin/registry/registration/",
    "/admin/oauth2_provider/application/",
    "/admin/oauth2_provider/accesstoken/",
    "/admin/auth/user/",
]
WIDTHS = (1280, 1400)


def seed_long_texts(operator: User) -> None:
    """One row of every list, each with the longest texts an operator may meet."""
    agent = make_agent(
        "a-very-long-agent-slug-for-the-layout",
        name="An agent whose name goes on and on for the layout test",
    )
    task = open_task(agent, ended(), owner="apikey:123456789", context_id="c" * 60)
    config = PushNotificationConfig.objects.create(
        task=task, config_id="hook-" + "x" * 40, url=LONG_URL, protocol_version="1.0",
        last_error=LONG_ERROR,
    )  # fmt: skip
    event = task.events.order_by("-sequence").first()
    assert event is not None
    Delivery.objects.create(
        config=config, event=event, sequence=event.sequence, state=DeliveryState.PENDING,
        attempts=4, next_attempt_at=timezone.now() + timedelta(hours=2), last_error=LONG_ERROR,
    )  # fmt: skip
    key, _ = ApiKey.issue("A key with a long name used by the nightly import job", operator,
                          scopes=["registry"])  # fmt: skip
    seed_audit(agent, operator, key)
    Registration.objects.create(
        agent=make_agent("registered"), registration_id="r" * 36, owner_principal="apikey:42",
        source=Source.CARD_URL, ttl_seconds=3600, expires_at=timezone.now() + timedelta(hours=1),
        card_url=LONG_URL, health=Health.FAILING, last_error=LONG_ERROR[:500],
    )  # fmt: skip
    WebhookInbox.objects.create(name="The nightly import job's receiver", owner=operator)
    app, secret = machine("The nightly import job's client application", operator)
    token_for(app, secret)


def seed_audit(agent: Any, operator: User, key: ApiKey) -> None:
    now = timezone.now()
    CredentialUse.objects.create(
        agent=agent, agent_slug=agent.slug, principal=f"apikey:{key.pk}", user=operator,
        credential_kind=CredentialKind.API_KEY, credential_ref=f"apikey:{key.pk}", api_key=key,
        binding="jsonrpc", version="1.0", first_used_at=now, last_used_at=now,
    )  # fmt: skip
    users = [f"user-number-{n}" for n in range(30)]
    AccessChange.objects.create(
        agent=agent, agent_slug=agent.slug, actor=operator, actor_name="op", via=AccessVia.ADMIN,
        before={"access": "anyone", "users": []}, after={"access": "listed", "users": users},
    )  # fmt: skip


def sign_in(page: Page, base: str) -> None:
    sign_in_admin(page, base, "op", PASSWORD)


def overflow(page: Page, table: str) -> dict[str, Any]:
    """How far the page, the content and the table reach past what is on screen."""
    return page.evaluate(
        """(table) => {
            const content = document.querySelector('#content');
            const box = document.querySelector(table).getBoundingClientRect();
            const root = document.documentElement;
            const scrollers = [...document.querySelectorAll('#content *')].filter(
                (el) => el.scrollWidth > el.clientWidth + 1 &&
                        getComputedStyle(el).overflowX !== 'visible' &&
                        !el.matches('.shortened, .shortened *, .visually-hidden, td, th'));
            return {
                page: root.scrollWidth - root.clientWidth,
                content: content.scrollWidth - content.clientWidth,
                table: Math.ceil(box.right) - root.clientWidth,
                scrollers: scrollers.map((el) => el.id || el.className || el.tagName),
            };
        }""",
        table,
    )


@contextmanager
def seeded_and_signed_in(base: str, width: int, height: int) -> Iterator[Page]:
    """The long texts seeded, and a page of Chromium at that size signed in as the operator."""
    seed_long_texts(User.objects.create_superuser("op", "op@example.com", PASSWORD))
    with chromium() as browser:
        page = browser.new_page(viewport={"width": width, "height": height})
        sign_in(page, base)
        yield page


def assert_fits(page: Page, table: str, where: str) -> None:
    measured = overflow(page, table)
    assert measured["page"] <= 0, (where, measured)
    assert measured["content"] <= 0, (where, measured)
    assert measured["table"] <= 0, (where, measured)
    assert measured["scrollers"] == [], (where, measured)


def test_every_admin_list_and_the_dashboard_fit_1280_px(live_server: Any, tmp_path: Path) -> None:
    operator = User.objects.create_superuser("op", "op@example.com", PASSWORD)
    seed_long_texts(operator)
    with chromium() as browser:
        for width in WIDTHS:
            page = browser.new_page(viewport={"width": width, "height": 900})
            sign_in(page, live_server.url)
            # The side menu starts collapsed: the lists get the window's width.
            expect(page.locator("#main")).not_to_have_class("main shifted")
            screenshot(page, f"admin-dashboard-{width}", tmp_path)
            assert_fits(page, "#console-dashboard", f"dashboard at {width}")
            for url in LISTS:
                page.goto(f"{live_server.url}{url}")
                expect(page.locator("#result_list tbody tr").first).to_be_visible()
                screenshot(page, f"admin{url.replace('/', '-').rstrip('-')}-{width}", tmp_path)
                assert_fits(page, "#result_list", f"{url} at {width}")
            page.close()


def test_a_shortened_cell_keeps_its_whole_text_and_the_last_error_is_on_screen(
    live_server: Any,
) -> None:
    with seeded_and_signed_in(live_server.url, 1280, 900) as page:
        page.goto(f"{live_server.url}/admin/push/delivery/")
        cell = page.locator("#result_list td.field-last_error .shortened")
        expect(cell).to_be_in_viewport()
        assert cell.get_attribute("title") == LONG_ERROR.strip()
        box = cell.bounding_box()
        assert box is not None and box["x"] + box["width"] <= 1280
        # The dashboard's push queue: the whole error on hover, the headers on one line.
        page.goto(f"{live_server.url}/admin/")
        title = page.locator("#console-push td.console-error").get_attribute("title") or ""
        assert len(title) >= 200 and LONG_ERROR.startswith(title)
        heights = page.locator("#console-push thead th").evaluate_all(
            "(cells) => cells.map((cell) => cell.getBoundingClientRect().height)"
        )
        assert max(heights) < 40, heights


def test_on_a_phone_the_admin_is_no_wider_than_the_screen_and_its_header_holds_its_parts(
    live_server: Any, tmp_path: Path
) -> None:
    # At 390 px the header's parts stood side by side past the screen's edge (842 px), and the
    # dashboard's list of apps kept a fixed 600 px.
    with seeded_and_signed_in(live_server.url, 390, 844) as page:
        for url in ["/admin/", "/admin/tasks/task/", "/admin/agents/agent/add/"]:
            page.goto(f"{live_server.url}{url}")
            screenshot(page, f"admin{url.replace('/', '-').rstrip('-')}-390", tmp_path)
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, (url, width)
            header = page.locator("#header").bounding_box()
            assert header is not None
            for part in ("#branding", "#user-tools", "#console-nav"):
                box = page.locator(part).bounding_box()
                assert box is not None and box["x"] + box["width"] <= 390, (url, part, box)
                # Inside the header, not over the page below it.
                assert box["y"] + box["height"] <= header["y"] + header["height"], (url, part)
