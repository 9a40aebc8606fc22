"""The operator's admin in a real browser: sign in, open an agent, read its card preview, and
make and edit an agent with plain inputs (tag chips, media-type boxes, extension rows, the
scheme picker, the executor kind's own settings), no JSON typed anywhere."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser import add_tags, chromium, json_inputs

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def sign_in_to(page: Page, base: str, path: str) -> None:
    from django.contrib.auth.models import User

    User.objects.create_superuser("op", "op@example.com", "operator-pass-123")
    page.goto(f"{base}/admin/login/?next={path}")
    page.fill("#id_username", "op")
    page.fill("#id_password", "operator-pass-123")
    page.click("input[type=submit]")


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
        page.click("#card-preview summary")
        preview = page.locator("#card-preview pre").inner_text()
        assert '"supportedInterfaces"' in preview
        assert f"{live_server.url}/agents/browsed/jsonrpc/" in preview
        assert page.locator(".inline-related").count() >= 2


def fill_new_agent(page: Page) -> None:
    """An agent of the python kind with one skill, its card set with the plain inputs."""
    page.fill("#id_slug", "toolbox")
    page.fill("#id_name", "Toolbox")
    page.fill("#id_description", "Small text tools.")
    page.select_option("#id_executor_kind", "python")
    expect(page.locator("#settings-python")).to_be_visible()
    expect(page.locator("#settings-http")).to_be_hidden()
    page.fill("#id_settings-python-functions-0-skill", "rev")
    page.select_option("#id_settings-python-functions-0-function", "demo.reverse")
    page.click("#settings-python .add-row")
    page.fill("#id_settings-python-functions-1-skill", "count")
    page.select_option("#id_settings-python-functions-1-function", "demo.word_count")

    page.click("summary:has-text('Card: modes and capabilities')")
    page.check("#id_default_input_modes input[value='application/json']")
    page.fill("#id_default_output_modes_other", "audio/mpeg")
    page.fill("#id_extensions-0-uri", "https://example.com/ext/citations/v1")
    page.fill("#id_extensions-0-description", "Cites its sources")
    page.check("#id_extensions-0-required")
    page.click("summary:has-text('Card: security')")
    page.check("#id_security_schemes input[value=apiKey]")
    page.check("#id_security_requirements input[value=apiKey]")

    page.fill("#id_skills-0-skill_id", "rev")
    page.fill("#id_skills-0-name", "Reverse")
    page.fill("#id_skills-0-description", "Reverses a text.")
    page.fill("#id_skills-0-tags-entry", "text, fun")
    page.fill("#id_skills-0-examples", "hello\nreverse me")


def test_an_operator_makes_and_edits_an_agent_without_typing_json(live_server: Any) -> None:
    from agents.models import Agent

    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        sign_in_to(page, live_server.url, "/admin/agents/agent/add/")
        assert json_inputs(page, "#agent_form") == []
        fill_new_agent(page)
        page.click("input[name=_continue]")
        expect(page.locator(".messagelist")).to_contain_text("was added successfully")
        assert json_inputs(page, "#agent_form") == []
        expect(page.locator("#skills-0 .chip-text")).to_have_text(["text", "fun"])

        page.click("#skills-0 .chip-remove[aria-label='Remove fun']")
        add_tags(page, "#id_skills-0-tags", "games")
        page.click("input[name=_continue]")
        expect(page.locator(".messagelist")).to_contain_text("was changed successfully")

    agent = Agent.objects.get(slug="toolbox")
    skill = agent.skills.get()
    assert (skill.tags, skill.examples) == (["text", "games"], ["hello", "reverse me"])
    assert agent.default_input_modes == ["text/plain", "application/json"]
    assert agent.default_output_modes == ["text/plain", "audio/mpeg"]
    assert agent.extensions == [
        {"uri": "https://example.com/ext/citations/v1", "description": "Cites its sources",
         "required": True}
    ]  # fmt: skip
    assert agent.security_schemes == {
        "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"}
    }
    assert agent.security_requirements == [{"apiKey": []}]
    assert agent.executor_settings == {
        "functions": {"rev": "demo.reverse", "count": "demo.word_count"}
    }


def test_the_card_of_an_agent_made_in_the_admin_lists_the_typed_tags(live_server: Any) -> None:
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        sign_in_to(page, live_server.url, "/admin/agents/agent/add/")
        fill_new_agent(page)
        page.click("input[name=_save]")
        expect(page.locator(".messagelist")).to_contain_text("was added successfully")
        card = page.request.get(f"{live_server.url}/agents/toolbox/.well-known/agent-card.json")
        assert card.json()["skills"][0]["tags"] == ["text", "fun"]


def test_the_access_lists_show_only_when_access_is_listed(
    live_server: Any, agent_factory: Any
) -> None:
    agent = agent_factory("guarded")
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        sign_in_to(page, live_server.url, f"/admin/agents/agent/{agent.pk}/change/")
        lists = page.locator(
            ".field-allowed_users, .field-allowed_groups, .field-allowed_applications"
        )
        expect(lists).to_have_count(3)
        for n in range(3):
            expect(lists.nth(n)).to_be_hidden()
        page.select_option("#id_access", "listed")
        for n in range(3):
            expect(lists.nth(n)).to_be_visible()
        page.select_option("#id_access", "signed_in")
        expect(lists.first).to_be_hidden()


def test_the_admin_names_the_field_of_a_bad_choice_and_opens_its_section(
    live_server: Any, agent_factory: Any
) -> None:
    agent = agent_factory("schemed")
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        sign_in_to(page, live_server.url, f"/admin/agents/agent/{agent.pk}/change/")
        page.click("summary:has-text('Card: security')")
        page.check("#id_security_requirements input[value=bearer]")
        page.click("input[name=_save]")
        error = page.locator(".field-security_requirements .errorlist")
        expect(error).to_be_visible()  # its folded section is opened
        expect(error).to_contain_text("Not a declared security scheme: bearer")
    agent.refresh_from_db()
    assert agent.security_requirements == []
