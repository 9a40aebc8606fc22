"""The hub's own "not found" and "server error" pages (DEBUG off, as in production): in the
hub's look, saying what happened, with a way back fitted to who is asking; /favicon.ico,
which browsers ask for on every page; and DRF's browsable API pages, in the hub's name.

Personas (tests/conftest.py): anonymous, `developer` (signed in, not staff), `operator`
(staff): each is offered only the ways back they may take.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.contrib.staticfiles import finders
from django.test import Client, RequestFactory
from django.views.defaults import server_error


def test_an_unknown_page_answers_the_hubs_404_with_ways_back(client: Client) -> None:
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "Page not found" in html and "/no/such/page/" in html
    assert 'href="/static/hub/site.css"' in html and 'rel="icon"' in html
    assert 'href="/"' in html and 'href="/dev/login/"' in html
    assert "/admin/" not in html  # not for the anonymous


def test_a_developer_is_offered_their_agents_and_not_the_admin(developer: User) -> None:
    client = Client()
    client.force_login(developer)
    html = client.get("/dev/agents/nobody-has-this-agent/").content.decode()
    assert "Page not found" in html
    assert 'href="/dev/agents/"' in html and 'href="/admin/"' not in html


def test_an_operator_is_offered_the_admin_too(operator_client: Client) -> None:
    html = operator_client.get("/no/such/page/").content.decode()
    assert 'href="/admin/"' in html and 'href="/dev/agents/"' in html


def test_a_server_error_answers_the_hubs_500_page(db: None) -> None:
    response = server_error(RequestFactory().get("/dev/agents/"))
    assert response.status_code == 500
    html = response.content.decode()
    assert "Something went wrong on our side" in html
    assert 'href="/static/hub/site.css"' in html and 'href="/"' in html


def test_favicon_ico_leads_to_the_hubs_icon(client: Client) -> None:
    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"] == "/static/hub/favicon.svg"
    assert finders.find("hub/favicon.svg")


def test_the_apis_browsable_pages_wear_the_hubs_name_and_icon(operator_client: Client) -> None:
    html = operator_client.get("/api/agents", HTTP_ACCEPT="text/html").content.decode()
    assert "A2A Hub" in html and 'href="/static/hub/favicon.svg"' in html
    assert "Django REST framework</a>" not in html
