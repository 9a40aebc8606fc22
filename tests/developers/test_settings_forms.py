"""The executor kinds' settings forms (agents/settings_forms.py) and their place on the
developer's register and edit pages.

Personas: `developer` (tests/conftest.py), signed in, registers and edits their own agents with
the kind's fields instead of a raw JSON box; the forms themselves need no user.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from agents.models import Agent
from executors.settings_forms import (
    SETTINGS_FORMS,
    HttpSettingsForm,
    PythonSettingsForm,
    settings_form_for,
)
from tests.factories.agents import agent_data, owned


def rows(*pairs: tuple[str, str], name: str = "functions") -> dict[str, str]:
    """A python agent's function rows as the page posts them: skill id, function."""
    data = {}
    for n, (skill, function) in enumerate(pairs):
        data |= {f"{name}-{n}-skill": skill, f"{name}-{n}-function": function}
    return data


def posted(form: Any) -> dict[str, Any]:
    """What an unbound form's inputs post back (row fields as one input a cell)."""
    data: dict[str, Any] = {}
    for name in form.fields:
        value = form[name].value()
        if isinstance(value, list):
            for n, row in enumerate(value):
                data |= {f"{name}-{n}-{key}": cell for key, cell in row.items()}
        else:
            data[name] = value
    return data


GOOD: dict[str, tuple[dict[str, str], dict[str, Any]]] = {
    "http": (
        {"url": "https://backend.example/a2a", "timeout": "12.5", "retries": "3"},
        {"url": "https://backend.example/a2a", "timeout": 12.5, "retries": 3},
    ),
    "a2a-remote": (
        {"card_url": "https://agent.example/.well-known/agent-card.json", "timeout": "60"},
        {"card_url": "https://agent.example/.well-known/agent-card.json", "timeout": 60.0},
    ),
    "python": (
        rows(("rev", "demo.reverse"), ("", ""), ("count", "demo.word_count")),
        {"functions": {"rev": "demo.reverse", "count": "demo.word_count"}},
    ),
    "echo": ({"chunks": "5"}, {"chunks": 5}),
    "writer": ({"delay": "0.05"}, {"delay": 0.05}),
    "slow": ({"seconds": "3", "step": "0.5"}, {"seconds": 3.0, "step": 0.5}),
    "interview": ({"question": "Which city?"}, {"question": "Which city?"}),
    "orchestrator": ({"agents": "echo\n toolbox \n"}, {"agents": ["echo", "toolbox"]}),
}

BAD: list[tuple[str, dict[str, str], str, str]] = [
    ("http", {"timeout": "30", "retries": "2"}, "url", "required"),
    ("http", {"url": "not a url", "timeout": "30", "retries": "2"}, "url", "valid URL"),
    ("http", {"url": "http://169.254.169.254/", "timeout": "30", "retries": "2"}, "url", "may not"),
    ("http", {"url": "http://10.1.2.3/hook", "timeout": "30", "retries": "2"}, "url", "may not"),
    ("http", {"url": "https://b.example/", "timeout": "0", "retries": "2"}, "timeout", "0.1"),
    ("http", {"url": "https://b.example/", "timeout": "601", "retries": "2"}, "timeout", "600"),
    ("http", {"url": "https://b.example/", "timeout": "30", "retries": "6"}, "retries", "5"),
    ("a2a-remote", {"timeout": "60"}, "card_url", "required"),
    ("a2a-remote", {"card_url": "http://192.168.0.1/card", "timeout": "60"}, "card_url", "may not"),
    ("a2a-remote", {"card_url": "https://a.example/c", "timeout": "0.5"}, "timeout", "1"),
    ("python", rows(("rev", "no.such.function")), "functions", "no.such.function"),
    ("python", rows(("rev", "")), "functions", "Row 1: give both"),
    ("python", rows(("", "demo.reverse")), "functions", "Row 1: give both"),
    ("python", rows(("a", "demo.reverse"), ("a", "demo.word_count")), "functions", "twice"),
    ("python", rows(("", "")), "functions", "required"),
    ("python", {}, "functions", "required"),
    ("echo", {"chunks": "0"}, "chunks", "1"),
    ("writer", {"delay": "-1"}, "delay", "0"),
    ("slow", {"seconds": "5", "step": "0"}, "step", "0.1"),
    ("interview", {"question": ""}, "question", "required"),
    ("orchestrator", {"agents": "echo\nNot A Slug"}, "agents", "Not A Slug"),
]


def test_every_kind_with_settings_has_a_form_and_the_others_none() -> None:
    assert set(SETTINGS_FORMS) <= set(settings.EXECUTOR_KINDS)
    assert settings_form_for("conformance") is None
    assert settings_form_for("http") is HttpSettingsForm
    assert settings_form_for("no-such-kind") is None


@pytest.mark.parametrize("kind", sorted(GOOD))
def test_each_form_turns_good_input_into_the_settings_and_back(kind: str) -> None:
    data, settings = GOOD[kind]
    form_class = settings_form_for(kind)
    assert form_class is not None
    form = form_class(data)
    assert form.is_valid(), form.errors
    assert form.settings() == settings
    # Shown again from the stored dict, the form gives the same settings.
    shown = form_class.from_settings(settings)
    again = form_class(posted(shown))
    assert again.is_valid(), again.errors
    assert again.settings() == settings


@pytest.mark.parametrize(("kind", "data", "field", "problem"), BAD)
def test_each_form_puts_errors_for_bad_input_next_to_the_field(
    kind: str, data: dict[str, str], field: str, problem: str
) -> None:
    form_class = settings_form_for(kind)
    assert form_class is not None
    form = form_class(data)
    assert not form.is_valid()
    assert problem in " ".join(form.errors.get(field, [])), form.errors


def test_the_defaults_are_the_executors_own() -> None:
    form = HttpSettingsForm.from_settings({"url": "https://b.example/"})
    assert form["url"].value() == "https://b.example/"
    assert form["timeout"].value() == 30.0
    assert form["retries"].value() == 2


def test_a_single_python_function_stays_a_single_function() -> None:
    form = PythonSettingsForm.from_settings({"function": "demo.reverse"})
    assert form["functions"].value() == [{"skill": "*", "function": "demo.reverse"}]
    bound = PythonSettingsForm(rows(("*", "demo.reverse")))
    assert bound.is_valid()
    assert bound.settings() == {"function": "demo.reverse"}


def test_the_python_form_names_the_registered_functions() -> None:
    help_text = str(PythonSettingsForm()["functions"].help_text)
    assert "demo.reverse" in help_text
    assert help_text.endswith(
        " Registered functions: <code>demo.countdown</code>, <code>demo.picture</code>, "
        "<code>demo.reverse</code>, <code>demo.story</code>, <code>demo.word_count</code>."
    )


def test_other_stored_keys_are_kept_and_the_kinds_own_replaced() -> None:
    form = PythonSettingsForm(rows(("a", "demo.reverse")))
    assert form.is_valid()
    stored = {"function": "demo.word_count", "note": "kept"}
    assert form.settings(stored) == {"note": "kept", "functions": {"a": "demo.reverse"}}


# -- on the developer pages ----------------------------------------------------------------


def page_data(kind: str, settings: dict[str, str], **fields: str) -> dict[str, str]:
    """What the register page posts: the kind's settings fields, no raw JSON."""
    data = agent_data(executor_kind=kind, **fields)
    data.pop("executor_settings", None)
    return data | {f"settings-{kind}-{name}": value for name, value in settings.items()}


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["http", "python"])
def test_registering_through_the_page_stores_the_kinds_settings(
    dev_client: Client, kind: str
) -> None:
    data, settings = GOOD[kind]
    response = dev_client.post(reverse("developers:agent-new"), page_data(kind, data))
    assert response.status_code == 302, response.context["form"].errors
    assert response["Location"] == reverse("developers:agent", kwargs={"slug": "weather"})
    agent = Agent.objects.get(slug="weather")
    assert agent.executor_kind == kind
    assert agent.executor_settings == settings


@pytest.mark.django_db
def test_only_the_selected_kinds_form_is_judged(dev_client: Client) -> None:
    data = page_data("echo", {}) | {"settings-http-url": "not a url"}
    response = dev_client.post(reverse("developers:agent-new"), data)
    assert response.status_code == 302
    assert response["Location"] == reverse("developers:agent", kwargs={"slug": "weather"})
    assert Agent.objects.get(slug="weather").executor_settings == {}


@pytest.mark.django_db
def test_bad_settings_are_refused_next_to_the_settings_field(dev_client: Client) -> None:
    data = page_data("http", {"url": "http://10.0.0.5/", "timeout": "900", "retries": "2"})
    response = dev_client.post(reverse("developers:agent-new"), data)
    assert response.status_code == 400
    settings_form = response.context["form"].settings_forms["http"]
    assert "may not" in " ".join(settings_form.errors["url"])
    assert "600" in " ".join(settings_form.errors["timeout"])
    page = response.content.decode()
    section = page[page.index('id="settings-http"') :]
    section = section[: section.index("</fieldset>")]
    assert "hidden" not in section.split(">")[0]
    assert 'class="errorlist"' in section and "may not" in section
    assert not Agent.objects.exists()


@pytest.mark.django_db
def test_the_preview_lists_the_settings_errors(dev_client: Client) -> None:
    data = page_data("python", rows(("rev", "no.such.function")))
    result = dev_client.post(reverse("developers:preview-new"), data).json()
    assert not result["ok"]
    assert any("no.such.function" in problem for problem in result["errors"])
    good = page_data("python", GOOD["python"][0])
    assert dev_client.post(reverse("developers:preview-new"), good).json()["ok"]


@pytest.mark.django_db
def test_the_edit_page_shows_the_stored_settings_and_saving_keeps_them(
    dev_client: Client, developer: User
) -> None:
    stored = {"url": "https://backend.example/hook", "timeout": 7.5, "retries": 1}
    agent = owned("mine", developer, executor_kind="http", executor_settings=stored)
    page = dev_client.get("/dev/agents/mine/edit/").content.decode()
    assert 'value="https://backend.example/hook"' in page
    assert 'value="7.5"' in page
    http_box = page[page.index('id="settings-http"') :].split(">")[0]
    assert "hidden" not in http_box
    assert "hidden" in page[page.index('id="settings-python"') :].split(">")[0]

    skill = agent.skills.get()
    data = page_data("http", {"url": stored["url"], "timeout": "8", "retries": "1"}, slug="mine")
    data |= {"skills-TOTAL_FORMS": "1", "skills-INITIAL_FORMS": "1", "skills-0-id": str(skill.pk)}
    response = dev_client.post("/dev/agents/mine/edit/", data)
    assert response.status_code == 302, response.context["form"].errors
    assert response["Location"] == reverse("developers:agent", kwargs={"slug": "mine"})
    agent.refresh_from_db()
    assert agent.executor_settings == stored | {"timeout": 8.0}


@pytest.mark.django_db
def test_changing_the_kind_replaces_the_old_kinds_settings(
    dev_client: Client, developer: User
) -> None:
    stored = {"card_url": "https://agent.example/card", "synced_at": "2026-01-01T00:00:00"}
    agent = owned("mine", developer, executor_kind="a2a-remote", executor_settings=stored)
    skill = agent.skills.get()
    data = page_data("interview", {"question": "Why?"}, slug="mine")
    data |= {"skills-TOTAL_FORMS": "1", "skills-INITIAL_FORMS": "1", "skills-0-id": str(skill.pk)}
    response = dev_client.post("/dev/agents/mine/edit/", data)
    assert response.status_code == 302
    assert response["Location"] == reverse("developers:agent", kwargs={"slug": "mine"})
    agent.refresh_from_db()
    assert agent.executor_settings == {"question": "Why?"}


@pytest.mark.django_db
def test_editing_a_remote_agent_keeps_its_sync_time(dev_client: Client, developer: User) -> None:
    stored = {"card_url": "https://agent.example/card", "synced_at": "2026-01-01T00:00:00"}
    agent = owned("mine", developer, executor_kind="a2a-remote", executor_settings=stored)
    skill = agent.skills.get()
    data = page_data("a2a-remote", {"card_url": stored["card_url"], "timeout": "90"}, slug="mine")
    data |= {"skills-TOTAL_FORMS": "1", "skills-INITIAL_FORMS": "1", "skills-0-id": str(skill.pk)}
    response = dev_client.post("/dev/agents/mine/edit/", data)
    assert response.status_code == 302
    assert response["Location"] == reverse("developers:agent", kwargs={"slug": "mine"})
    agent.refresh_from_db()
    assert agent.executor_settings == stored | {"timeout": 90.0}


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_page_shows_the_selected_kinds_fields_in_a_browser(live_server: Any) -> None:
    from playwright.sync_api import expect

    from tests.browser import chromium, fill_skill, sign_in

    User.objects.create_user("dev", "dev@example.com", "developer-pass-123")
    with chromium() as browser:
        page = browser.new_page()
        sign_in(page, live_server.url)
        page.goto(f"{live_server.url}/dev/register/")
        page.fill("#id_slug", "relay")
        page.fill("#id_name", "Relay")
        page.fill("#id_description", "Hands messages to a backend.")
        fill_skill(page, 0, "relay", "Relay")
        url = page.locator("#id_settings-http-url")
        expect(url).to_be_hidden()

        page.select_option("#id_executor_kind", "http")
        expect(url).to_be_visible()
        expect(page.locator("#id_settings-http-timeout")).to_have_value("30.0")
        expect(page.locator("#id_settings-python-functions")).to_be_hidden()
        expect(page.locator("#id_settings-python-functions-0-function")).to_be_hidden()
        errors = page.locator("#preview-errors")
        url.fill("http://10.0.0.5/hook")
        expect(errors).to_contain_text("may not call")
        url.fill("https://backend.example/hook")
        expect(errors).to_be_hidden()

        page.click("#agent-form button[type=submit]")
        expect(page.locator("h1")).to_contain_text("Relay")

    agent = Agent.objects.get(slug="relay")
    assert agent.executor_settings == {
        "url": "https://backend.example/hook",
        "timeout": 30.0,
        "retries": 2,
    }
