"""The developer pages in a real browser: sign in, register an agent with two skills while the
live card preview follows, then try it from its page and read the echo."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser import chromium, fill_skill, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_developer_registers_an_agent_and_tries_it(live_server: Any) -> None:
    from django.contrib.auth.models import User

    from agents.models import Agent

    developer = User.objects.create_user("dev", "dev@example.com", "developer-pass-123")
    with chromium() as browser:
        page = browser.new_page()
        sign_in(page, live_server.url)
        page.click("text=Register an agent >> nth=0")
        errors = page.locator("#preview-errors")
        expect(errors).to_contain_text("Slug")  # the empty form is judged at once

        page.fill("#id_slug", "parrot")
        page.fill("#id_name", "Parrot")
        page.fill("#id_description", "Repeats what it hears.")
        page.select_option("#id_executor_kind", "echo")
        fill_skill(page, 0, "repeat", "Repeat")
        card = page.locator("#preview-card")
        expect(card).to_contain_text('"name": "Parrot"')
        expect(card).to_contain_text(f"{live_server.url}/agents/parrot/jsonrpc/")
        expect(errors).to_be_hidden()

        page.click("#add-skill")
        fill_skill(page, 1, "shout", "Shout")
        expect(card).to_contain_text('"id": "shout"')
        page.fill("#id_security_schemes", '{"k": {"type": "carrier-pigeon"}}')
        expect(errors).to_contain_text("carrier-pigeon")
        page.fill("#id_security_schemes", "{}")
        expect(errors).to_be_hidden()

        page.click("#agent-form button[type=submit]")
        expect(page.locator("h1")).to_contain_text("Parrot")
        page.fill("#try-text", "polly wants a cracker")
        page.click("#try-form button[type=submit]")
        expect(page.locator("#try-state")).to_have_text("completed")
        expect(page.locator("#try-text-out")).to_have_text("polly wants a cracker")

        page.click(".tabs >> text=Tasks")
        expect(page.locator(".listing.tasks tbody tr")).to_have_count(1)
        expect(page.locator(".listing.tasks")).to_contain_text("Completed")

    agent = Agent.objects.get(slug="parrot")
    assert agent.owner == developer
    assert [s.skill_id for s in agent.skills.all()] == ["repeat", "shout"]


def test_the_form_shows_field_errors_after_a_refused_submit(live_server: Any) -> None:
    from django.contrib.auth.models import User

    User.objects.create_user("dev", "dev@example.com", "developer-pass-123")
    with chromium() as browser:
        page = browser.new_page()
        sign_in(page, live_server.url)
        page.goto(f"{live_server.url}/dev/register/")
        page.fill("#id_slug", "Bad Slug")
        page.fill("#id_name", "Bad")
        page.fill("#id_description", "Refused.")
        page.click("#agent-form button[type=submit]")
        expect(page.locator(".field-slug .errorlist")).to_contain_text("lowercase")
        expect(page.locator("#skill-errors")).to_contain_text("at least one skill")
