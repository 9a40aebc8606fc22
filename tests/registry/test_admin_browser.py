"""The operator's view of registrations in a real browser: signed in to the admin, they see
each registration with its expiry, whether it is live, and its card's health (one live, one
expired, one whose card does not answer), and revoke one with the action; its agent's card
then answers 404."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from playwright.sync_api import expect

from registry.models import Health, Registration
from tests.browser import chromium
from tests.registry.conftest import CARD_V1, Registrar, card

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def register_three(owner: Registrar) -> None:
    for name in ("Live", "Lapsed", "Broken"):
        assert owner.register(card(CARD_V1, name=name)).status_code == 201
    lapsed = timezone.now() - timedelta(minutes=5)
    Registration.objects.filter(agent__slug="lapsed").update(expires_at=lapsed)
    Registration.objects.filter(agent__slug="broken").update(
        health=Health.FAILING, last_error="The card URL did not answer: connection refused",
        checked_at=timezone.now(),
    )  # fmt: skip


def test_an_operator_sees_expiry_and_health_and_revokes_one(
    live_server: Any, owner: Registrar
) -> None:
    User.objects.create_superuser("op", "op@example.com", "operator-pass-123")
    register_three(owner)
    card_of_broken = f"{live_server.url}/agents/broken/.well-known/agent-card.json"
    assert httpx.get(card_of_broken, timeout=30).status_code == 200
    with chromium() as browser:
        page = browser.new_page()
        page.goto(f"{live_server.url}/admin/login/?next=/admin/registry/registration/")
        page.fill("#id_username", "op")
        page.fill("#id_password", "operator-pass-123")
        page.click("input[type=submit]")

        rows = page.locator("#result_list tbody tr")
        expect(rows).to_have_count(3)
        row = {
            slug: rows.filter(has=page.locator("th.field-agent", has_text=slug))
            for slug in ("live", "lapsed", "broken")
        }
        expect(row["live"].locator("td.field-state")).to_have_text("live")
        expect(row["lapsed"].locator("td.field-state")).to_have_text("expired")
        expect(row["broken"].locator("td.field-health")).to_have_text("card does not answer")
        expect(row["broken"].locator("td.field-last_error")).to_contain_text("connection refused")
        expect(row["live"].locator("td.field-health")).to_have_text("not checked")
        for slug in row:
            expect(row[slug].locator("td.field-expires_at")).not_to_be_empty()

        row["broken"].locator("input.action-select").check()
        page.select_option("select[name=action]", "revoke")
        page.click("button[name=index]")
        expect(page.locator(".messagelist")).to_contain_text("1 registration(s) revoked.")
        expect(page.locator("#result_list tbody tr")).to_have_count(2)
        expect(page.locator("#result_list")).not_to_contain_text("broken")

    assert httpx.get(card_of_broken, timeout=30).status_code == 404
    assert sorted(Registration.objects.values_list("agent__slug", flat=True)) == ["lapsed", "live"]
