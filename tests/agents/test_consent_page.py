"""The OAuth2 consent page (django-oauth-toolkit's) a client sends a person to: in the hub's
look, with its icon, asking to authorize the named application.

Persona: `developer`, signed in, consenting for their own client application.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client
from oauth2_provider.models import Application

from tests.factories.oauth import REDIRECT


def test_the_consent_page_wears_the_hubs_look(developer: User) -> None:
    app = Application.objects.create(
        name="Nightly importer", client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE, redirect_uris=REDIRECT,
    )  # fmt: skip
    browser = Client()
    browser.force_login(developer)
    query = {"response_type": "code", "client_id": app.client_id, "redirect_uri": REDIRECT,
             "scope": "a2a:invoke", "code_challenge": "x" * 43,
             "code_challenge_method": "S256"}  # fmt: skip
    page = browser.get("/o/authorize/", query)
    assert page.status_code == 200
    html = page.content.decode()
    assert "Authorize Nightly importer?" in html
    assert 'href="/static/hub/site.css"' in html and 'href="/static/hub/favicon.svg"' in html
    assert 'class="site-header"' in html
