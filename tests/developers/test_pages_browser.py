"""The developer pages in a real browser: sign in, register an agent with two skills while the
live card preview follows, then try it from its page and read the echo; register and edit an
agent with plain inputs (tag chips, media-type boxes, the scheme picker, the python kind's
function rows), no JSON typed anywhere; the access lists shown only for "listed"."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser import add_tags, chromium, fill_skill, json_inputs, sign_in

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
        page.check("#id_security_requirements input[value=bearer]")
        expect(errors).to_contain_text("Not a declared security scheme: bearer")
        page.uncheck("#id_security_requirements input[value=bearer]")
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


def test_a_developer_registers_and_edits_an_agent_without_typing_json(live_server: Any) -> None:
    from django.contrib.auth.models import User

    from agents.models import Agent

    User.objects.create_user("dev", "dev@example.com", "developer-pass-123")
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        sign_in(page, live_server.url)
        page.goto(f"{live_server.url}/dev/register/")
        assert json_inputs(page, "#agent-form") == []
        page.fill("#id_slug", "toolbox")
        page.fill("#id_name", "Toolbox")
        page.fill("#id_description", "Small text tools.")
        page.check("#id_default_output_modes input[value='application/json']")
        page.check("#id_security_schemes input[value=bearer]")
        page.check("#id_security_requirements input[value=bearer]")
        page.select_option("#id_executor_kind", "python")
        page.fill("#id_skills-0-skill_id", "rev")
        page.fill("#id_skills-0-name", "Reverse")
        page.fill("#id_skills-0-description", "Reverses a text.")
        page.fill("#id_skills-0-tags-entry", "text, fun")
        page.check("#id_skills-0-input_modes input[value='text/markdown']")
        page.fill("#id_settings-python-functions-0-skill", "rev")
        page.select_option("#id_settings-python-functions-0-function", "demo.reverse")
        card = page.locator("#preview-card")
        expect(card).to_contain_text('"fun"')
        page.click("#agent-form button[type=submit]")
        expect(page.locator("h1")).to_contain_text("Toolbox")

        page.goto(f"{live_server.url}/dev/agents/toolbox/edit/")
        assert json_inputs(page, "#agent-form") == []
        expect(page.locator("#id_skills-0-tags + .chips .chip-text")).to_have_text(["text", "fun"])
        expect(page.locator("#id_settings-python-functions-0-function")).to_have_value(
            "demo.reverse"
        )
        add_tags(page, "#id_skills-0-tags", "games")
        page.click("#agent-form button[type=submit]")
        expect(page.locator("h1")).to_contain_text("Toolbox")
        card_json = page.request.get(
            f"{live_server.url}/agents/toolbox/.well-known/agent-card.json"
        )
        assert card_json.json()["skills"][0]["tags"] == ["text", "fun", "games"]

    agent = Agent.objects.get(slug="toolbox")
    skill = agent.skills.get()
    assert (skill.tags, skill.input_modes) == (["text", "fun", "games"], ["text/markdown"])
    assert agent.default_output_modes == ["text/plain", "application/json"]
    assert agent.security_schemes == {"bearer": {"type": "http", "scheme": "bearer"}}
    assert agent.security_requirements == [{"bearer": []}]
    assert agent.executor_settings == {"functions": {"rev": "demo.reverse"}}
    assert agent.sign_card  # the page shows the box, ticked as the model's default


def test_the_access_page_shows_the_lists_only_for_listed(live_server: Any) -> None:
    from django.contrib.auth.models import User

    from tests.factories.agents import owned

    developer = User.objects.create_user("dev", "dev@example.com", "developer-pass-123")
    owned("guarded", developer)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        sign_in(page, live_server.url)
        page.goto(f"{live_server.url}/dev/agents/guarded/access/")
        lists = page.locator("#listed-callers")
        expect(lists).to_be_hidden()
        page.check("input[name=access][value=listed]")
        expect(lists).to_be_visible()
        page.fill("#id_allowed_users", "dev")
        page.click("#access-form button[type=submit]")
        expect(page.locator("input[name=access][value=listed]")).to_be_checked()
        expect(lists).to_be_visible()
        page.check("input[name=access][value=anyone]")
        expect(lists).to_be_hidden()
