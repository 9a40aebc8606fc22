"""OAuth2 credentials from the hub's own authorization server, made the way clients make them:
a client-credentials application and its token, and a person's token through the consent page
(authorization code with PKCE)."""

from __future__ import annotations

import base64
import hashlib
import secrets
from typing import Any
from urllib.parse import parse_qs, urlsplit

from django.contrib.auth.models import User
from django.test import Client
from oauth2_provider.models import Application

REDIRECT = "https://client.example/callback"


def machine(name: str = "robot", owner: User | None = None) -> tuple[Application, str]:
    """A client-credentials application and its secret (stored hashed, shown once)."""
    secret = secrets.token_urlsafe(24)
    app = Application.objects.create(
        name=name, user=owner, client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_CLIENT_CREDENTIALS, client_secret=secret,
    )  # fmt: skip
    return app, secret


def token_for(app: Application, secret: str, scope: str | None = None) -> dict[str, Any]:
    basic = base64.b64encode(f"{app.client_id}:{secret}".encode()).decode()
    data = {"grant_type": "client_credentials"} | ({"scope": scope} if scope else {})
    response = Client().post("/o/token/", data, headers={"Authorization": f"Basic {basic}"})
    assert response.status_code == 200, response.content
    answer: dict[str, Any] = response.json()
    return answer


def user_token(user: User, scope: str = "a2a:invoke") -> dict[str, Any]:
    """A person's token: authorization code with PKCE, consent given on the hub's page."""
    app = Application.objects.create(
        name="people's app", client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE, redirect_uris=REDIRECT,
    )  # fmt: skip
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    browser = Client()
    browser.force_login(user)
    query = {"response_type": "code", "client_id": app.client_id, "redirect_uri": REDIRECT,
             "scope": scope, "code_challenge": challenge.decode().rstrip("="),
             "code_challenge_method": "S256", "state": "xyz"}  # fmt: skip
    assert browser.get("/o/authorize/", query).status_code == 200  # the consent page
    consent = browser.post("/o/authorize/", query | {"allow": "Authorize"})
    assert consent.status_code == 302, consent.content
    code = parse_qs(urlsplit(consent["Location"]).query)["code"][0]
    response = Client().post("/o/token/", {
        "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
        "client_id": app.client_id, "code_verifier": verifier,
    })  # fmt: skip
    assert response.status_code == 200, response.content
    answer: dict[str, Any] = response.json()
    return answer
