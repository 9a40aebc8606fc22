"""Importing an agent from a remote Agent Card, and re-syncing it, through the developer pages.

The remote is a real http.server on 127.0.0.1 serving hand-written 1.0 and 0.3 cards; the hub
fetches them through its guarded HTTP seam, so the tests open 127.0.0.1 with
OUTBOUND_ALLOWED_HOSTS, as a developer would (one test leaves it closed).

Personas and their rights:
- `developer` (tests/conftest.py): signed in; imports agents (they become the owner) and
  re-syncs them.
- `rival`: another signed-in user; the developer's imported agents do not exist for them (404).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from agents.models import Agent
from tests.helpers import serving

pytestmark = pytest.mark.django_db

CARD_V1: dict[str, Any] = {
    "name": "Remote Weather",
    "description": "Tells the weather, from somewhere else.",
    "version": "2.1.0",
    "supportedInterfaces": [
        {
            "url": "https://weather.example/a2a/jsonrpc",
            "protocolBinding": "JSONRPC",
            "protocolVersion": "1.0",
        }
    ],
    "provider": {"organization": "Weather Co", "url": "https://weather.example"},
    "documentationUrl": "https://weather.example/docs",
    "iconUrl": "https://weather.example/icon.png",
    "capabilities": {"streaming": True, "pushNotifications": True},
    "securitySchemes": {
        "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}},
    },
    "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
    "defaultInputModes": ["text/plain"],
    "defaultOutputModes": ["text/plain", "application/json"],
    "skills": [
        {
            "id": "forecast",
            "name": "Forecast",
            "description": "The forecast for a city.",
            "tags": ["weather", "forecast"],
            "examples": ["Weather in Paris tomorrow?"],
            "outputModes": ["application/json"],
        },
        {
            "id": "alerts",
            "name": "Alerts",
            "description": "Storm warnings.",
            "tags": ["weather"],
        },
    ],
}

CARD_V03: dict[str, Any] = {
    "protocolVersion": "0.3.0",
    "name": "Legacy Translator",
    "description": "Translates text, A2A 0.3 style.",
    "url": "https://translate.example/a2a",
    "preferredTransport": "JSONRPC",
    "version": "0.9.1",
    "capabilities": {"streaming": False, "pushNotifications": False},
    "securitySchemes": {"apiKey": {"type": "apiKey", "in": "header", "name": "X-Key"}},
    "security": [{"apiKey": []}],
    "defaultInputModes": ["text/plain"],
    "defaultOutputModes": ["text/plain"],
    "skills": [
        {
            "id": "translate",
            "name": "Translate",
            "description": "Translates between languages.",
            "tags": ["language"],
            "examples": ["Translate 'hello' to French"],
            "inputModes": ["text/plain"],
        }
    ],
}


class Remote:
    """What the remote serves: path -> (content type, body); anything else is a 404."""

    def __init__(self, server: ThreadingHTTPServer) -> None:
        self.server = server
        self.pages: dict[str, tuple[str, bytes]] = {}

    def serve(self, path: str, document: Any) -> str:
        self.pages[path] = ("application/json", json.dumps(document).encode())
        return self.url(path)

    def serve_text(self, path: str, text: str) -> str:
        self.pages[path] = ("text/html", text.encode())
        return self.url(path)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"


def handler_for(remote: Remote) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            content_type, body = remote.pages.get(self.path, ("text/plain", b""))
            self.send_response(200 if self.path in remote.pages else 404)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def remote(settings: Any) -> Iterator[Remote]:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    served = Remote(server)
    server.RequestHandlerClass = handler_for(served)
    with serving(server):
        yield served


@pytest.fixture
def rival_client(db: None) -> Client:
    rival = User.objects.create_user("rival", "rival@example.com", "rival-pass-123")
    client = Client()
    client.force_login(rival)
    return client


def import_card(client: Client, url: str, slug: str = "weather") -> Any:
    return client.post(reverse("developers:agent-import"), {"card_url": url, "slug": slug})


def card_url_errors(response: Any) -> list[str]:
    return list(response.context["form"].errors.get("card_url", []))


# -- importing ------------------------------------------------------------------------------


def test_the_import_page_is_offered_to_a_signed_in_developer(dev_client: Client) -> None:
    page = dev_client.get(reverse("developers:agent-import"))
    assert page.status_code == 200
    assert b"Import from a card URL" in page.content
    assert reverse("developers:agent-import").encode() in dev_client.get("/dev/agents/").content


def test_the_slug_hint_shows_the_address_it_makes(dev_client: Client) -> None:
    page = dev_client.get(reverse("developers:agent-import")).content.decode()
    assert "/agents/&lt;slug&gt;/, e.g. " in page
    assert "/agents//." not in page


def test_the_import_page_sends_an_anonymous_visitor_to_sign_in(client: Client) -> None:
    response = client.get("/dev/import/")
    assert response.status_code == 302
    assert response["Location"].startswith("/dev/login/")
    assert response["Location"] == "/dev/login/?next=/dev/import/"


def test_importing_a_1_0_card_creates_a_remote_agent_with_its_skills(
    dev_client: Client, developer: User, remote: Remote
) -> None:
    url = remote.serve("/.well-known/agent-card.json", CARD_V1)
    response = import_card(dev_client, url)
    assert response.status_code == 302
    assert response["Location"] == reverse("developers:agent", kwargs={"slug": "weather"})
    agent = Agent.objects.get(slug="weather")
    assert agent.owner == developer
    assert agent.executor_kind == "a2a-remote"
    assert agent.executor_settings["card_url"] == url
    assert agent.executor_settings["synced_at"]
    assert (agent.name, agent.description, agent.version) == (
        "Remote Weather", "Tells the weather, from somewhere else.", "2.1.0",
    )  # fmt: skip
    assert (agent.provider_organization, agent.provider_url) == (
        "Weather Co", "https://weather.example",
    )  # fmt: skip
    assert agent.icon_url == "https://weather.example/icon.png"
    assert agent.documentation_url == "https://weather.example/docs"
    assert agent.default_output_modes == ["text/plain", "application/json"]
    forecast, alerts = agent.skills.all()
    assert (forecast.skill_id, forecast.name, forecast.tags) == (
        "forecast", "Forecast", ["weather", "forecast"],
    )  # fmt: skip
    assert forecast.examples == ["Weather in Paris tomorrow?"]
    assert forecast.output_modes == ["application/json"]
    assert alerts.skill_id == "alerts"


def test_an_imported_agent_streams_as_the_remote_does_but_copies_no_push_or_security(
    dev_client: Client, remote: Remote
) -> None:
    import_card(dev_client, remote.serve("/card.json", CARD_V1))
    agent = Agent.objects.get(slug="weather")
    assert agent.streaming is True
    assert agent.push_notifications is False
    assert agent.security_schemes == {}
    assert agent.security_requirements == []


def test_importing_a_0_3_card_creates_a_remote_agent_with_its_skills(
    dev_client: Client, developer: User, remote: Remote
) -> None:
    url = remote.serve("/legacy/agent.json", CARD_V03)
    response = import_card(dev_client, url, slug="translator")
    assert response.status_code == 302
    assert response["Location"] == reverse("developers:agent", kwargs={"slug": "translator"})
    agent = Agent.objects.get(slug="translator")
    assert agent.owner == developer
    assert agent.executor_kind == "a2a-remote"
    assert agent.executor_settings["card_url"] == url
    assert (agent.name, agent.version, agent.streaming) == ("Legacy Translator", "0.9.1", False)
    assert agent.security_schemes == {}
    [skill] = agent.skills.all()
    assert (skill.skill_id, skill.tags, skill.input_modes) == (
        "translate", ["language"], ["text/plain"],
    )  # fmt: skip


def test_a_json_document_that_is_no_card_is_a_form_error_and_creates_nothing(
    dev_client: Client, remote: Remote
) -> None:
    response = import_card(dev_client, remote.serve("/other.json", {"hello": "world"}))
    assert response.status_code == 400
    assert "not an A2A 1.0 or 0.3 Agent Card" in card_url_errors(response)[0]
    assert not Agent.objects.exists()


def test_a_json_list_is_a_form_error_and_creates_nothing(
    dev_client: Client, remote: Remote
) -> None:
    response = import_card(dev_client, remote.serve("/list.json", [CARD_V1]))
    assert "not a JSON object" in card_url_errors(response)[0]
    assert not Agent.objects.exists()


def test_a_document_that_is_not_json_is_a_form_error_and_creates_nothing(
    dev_client: Client, remote: Remote
) -> None:
    response = import_card(dev_client, remote.serve_text("/page.html", "<html>hi</html>"))
    assert response.status_code == 400
    assert "did not answer with JSON" in card_url_errors(response)[0]
    assert not Agent.objects.exists()


def test_a_missing_card_is_a_form_error_naming_the_http_status(
    dev_client: Client, remote: Remote
) -> None:
    response = import_card(dev_client, remote.url("/nothing-here.json"))
    assert "HTTP 404" in card_url_errors(response)[0]
    assert not Agent.objects.exists()


def test_an_unreachable_url_is_a_form_error_and_creates_nothing(
    dev_client: Client, remote: Remote
) -> None:
    # A port that was just open and is now closed: nothing listens there.
    closed = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = closed.server_address[1]
    closed.server_close()
    response = import_card(dev_client, f"http://127.0.0.1:{port}/card.json")
    assert response.status_code == 400
    assert "could not be fetched" in card_url_errors(response)[0]
    assert not Agent.objects.exists()


def test_a_loopback_url_is_refused_without_the_allow_list(
    dev_client: Client, remote: Remote, settings: Any
) -> None:
    url = remote.serve("/card.json", CARD_V1)
    settings.OUTBOUND_ALLOWED_HOSTS = []
    response = import_card(dev_client, url)
    assert response.status_code == 400
    assert "may not fetch this URL" in card_url_errors(response)[0]
    assert not Agent.objects.exists()


def test_a_slug_already_taken_is_a_form_error(
    dev_client: Client, remote: Remote, agent_factory: Any
) -> None:
    agent_factory("weather")
    response = import_card(dev_client, remote.serve("/card.json", CARD_V1))
    assert response.context["form"].errors["slug"] == ["An agent with this slug already exists."]
    assert Agent.objects.count() == 1


def test_a_card_whose_skill_the_hub_cannot_take_is_a_form_error(
    dev_client: Client, remote: Remote
) -> None:
    # The SDK takes any skill id; the hub's ids are letters, digits, _ . and -.
    spaced = json.loads(json.dumps(CARD_V1))
    spaced["skills"][0]["id"] = "the forecast"
    response = import_card(dev_client, remote.serve("/card.json", spaced))
    assert "cannot publish this card" in card_url_errors(response)[0]
    assert "skill_id" in card_url_errors(response)[0]
    assert not Agent.objects.exists()


# -- the imported agent's own card ----------------------------------------------------------


def test_the_imported_agents_own_card_is_served_by_the_hub(
    client: Client, dev_client: Client, remote: Remote
) -> None:
    import_card(dev_client, remote.serve("/card.json", CARD_V1))
    card = client.get("/agents/weather/.well-known/agent-card.json").json()
    assert card["name"] == "Remote Weather"
    assert [skill["id"] for skill in card["skills"]] == ["forecast", "alerts"]
    own = {i["url"] for i in card["supportedInterfaces"] if not i.get("tenant")}
    assert own == {
        "http://testserver/agents/weather/jsonrpc/",
        "http://testserver/agents/weather/rest/",
    }
    assert not card.get("securitySchemes")
    assert card["capabilities"].get("pushNotifications", False) is False


def test_the_agent_page_shows_the_remote_card_and_the_last_sync(
    dev_client: Client, remote: Remote
) -> None:
    url = remote.serve("/card.json", CARD_V1)
    import_card(dev_client, url)
    page = dev_client.get(reverse("developers:agent", kwargs={"slug": "weather"})).content
    assert b"Re-sync from the remote card" in page
    assert url.encode() in page
    assert b"Last synced: <time" in page


# -- re-syncing -----------------------------------------------------------------------------


def test_re_sync_picks_up_a_changed_name_and_skill_list(dev_client: Client, remote: Remote) -> None:
    url = remote.serve("/card.json", CARD_V1)
    import_card(dev_client, url)
    first_sync = Agent.objects.get(slug="weather").executor_settings["synced_at"]
    changed = json.loads(json.dumps(CARD_V1)) | {"name": "Weather Deluxe"}
    changed["skills"] = [
        {"id": "radar", "name": "Radar", "description": "Radar images.", "tags": ["maps"]}
    ]
    remote.serve("/card.json", changed)
    response = dev_client.post(reverse("developers:resync", kwargs={"slug": "weather"}))
    assert response.status_code == 302
    assert response["Location"] == reverse("developers:agent", kwargs={"slug": "weather"})
    agent = Agent.objects.get(slug="weather")
    assert agent.name == "Weather Deluxe"
    assert [skill.skill_id for skill in agent.skills.all()] == ["radar"]
    assert agent.executor_settings["synced_at"] > first_sync
    card = dev_client.get("/agents/weather/.well-known/agent-card.json").json()
    assert [skill["id"] for skill in card["skills"]] == ["radar"]


def test_re_sync_keeps_what_the_developer_chose_for_the_hub(
    dev_client: Client, remote: Remote
) -> None:
    import_card(dev_client, remote.serve("/card.json", CARD_V1))
    Agent.objects.filter(slug="weather").update(
        push_notifications=True,
        security_schemes={"apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"}},
        security_requirements=[{"apiKey": []}],
    )
    dev_client.post(reverse("developers:resync", kwargs={"slug": "weather"}))
    agent = Agent.objects.get(slug="weather")
    assert agent.push_notifications is True
    assert agent.security_requirements == [{"apiKey": []}]


def test_a_failed_re_sync_is_a_message_and_changes_nothing(
    dev_client: Client, remote: Remote
) -> None:
    import_card(dev_client, remote.serve("/card.json", CARD_V1))
    before = Agent.objects.get(slug="weather")
    remote.serve("/card.json", {"name": "Broken"})
    response = dev_client.post(
        reverse("developers:resync", kwargs={"slug": "weather"}), follow=True
    )
    assert "Nothing was changed" in response.content.decode()
    assert response.redirect_chain == [
        (reverse("developers:agent", kwargs={"slug": "weather"}), 302)
    ]
    agent = Agent.objects.get(slug="weather")
    assert agent.name == "Remote Weather"
    assert agent.executor_settings == before.executor_settings
    assert [skill.skill_id for skill in agent.skills.all()] == ["forecast", "alerts"]


def test_another_user_cannot_re_sync_the_agent(
    dev_client: Client, rival_client: Client, remote: Remote
) -> None:
    import_card(dev_client, remote.serve("/card.json", CARD_V1))
    remote.serve("/card.json", CARD_V1 | {"name": "Hijacked"})
    response = rival_client.post(reverse("developers:resync", kwargs={"slug": "weather"}))
    assert response.status_code == 404
    assert Agent.objects.get(slug="weather").name == "Remote Weather"


def test_re_sync_is_refused_for_an_agent_that_fronts_no_remote_card(
    dev_client: Client, developer: User, agent_factory: Any
) -> None:
    agent_factory("local", owner=developer)
    response = dev_client.post(reverse("developers:resync", kwargs={"slug": "local"}), follow=True)
    assert "does not front a remote card" in response.content.decode()
    assert response.redirect_chain == [(reverse("developers:agent", kwargs={"slug": "local"}), 302)]


def test_re_sync_needs_a_post(dev_client: Client, remote: Remote) -> None:
    import_card(dev_client, remote.serve("/card.json", CARD_V1))
    response = dev_client.get(reverse("developers:resync", kwargs={"slug": "weather"}))
    assert response.status_code == 405


def test_a_url_on_the_hub_itself_is_refused_even_with_loopback_allow_listed(
    dev_client: Client, remote: Remote, settings: Any
) -> None:
    url = remote.serve("/card.json", CARD_V1)
    settings.HOST, settings.PORT = "127.0.0.1", int(url.split(":")[2].split("/")[0])

    response = import_card(dev_client, url.replace("127.0.0.1", "localhost"))

    assert response.status_code == 400
    assert "points at this hub itself" in card_url_errors(response)[0]
    assert not Agent.objects.exists()
