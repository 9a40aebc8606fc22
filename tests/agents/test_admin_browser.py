"""The operator's admin in a real browser: sign in, open an agent, read its card preview."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser import chromium

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_operator_signs_in_and_sees_the_card_preview(live_server: Any, agent_factory: Any) -> None:
    from django.contrib.auth.models import User

    User.objects.create_superuser("op", "op@example.com", "operator-pass-123")
    agent_factory("browsed", skills=2)
    with chromium() as browser:
        page = browser.new_page()
        page.goto(f"{live_server.url}/admin/")
        page.fill("#id_username", "op")
        page.fill("#id_password", "operator-pass-123")
        page.click("input[type=submit]")
        page.locator("#content-main a[href='/admin/agents/agent/']").first.click()
        page.click("#result_list a:text-is('browsed')")
        preview = page.locator("#card-preview pre").inner_text()
        assert '"supportedInterfaces"' in preview
        assert f"{live_server.url}/agents/browsed/jsonrpc/" in preview
        assert page.locator(".inline-related").count() >= 2


def test_the_admin_shows_a_field_error_for_an_invalid_scheme(
    live_server: Any, agent_factory: Any
) -> None:
    from django.contrib.auth.models import User

    User.objects.create_superuser("op", "op@example.com", "operator-pass-123")
    agent = agent_factory("schemed")
    with chromium() as browser:
        page = browser.new_page()
        page.goto(f"{live_server.url}/admin/login/?next=/admin/agents/agent/{agent.pk}/change/")
        page.fill("#id_username", "op")
        page.fill("#id_password", "operator-pass-123")
        page.click("input[type=submit]")
        page.fill("#id_security_schemes", '{"key": {"type": "carrier-pigeon"}}')
        page.click("input[name=_save]")
        error = page.locator(".field-security_schemes .errorlist").inner_text()
        assert "carrier-pigeon" in error
    agent.refresh_from_db()
    assert agent.security_schemes == {}
