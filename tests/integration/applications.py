"""OAuth2 applications of a running hub, made as an operator would make them (in the hub's own
Django, so the client secret is stored hashed and shown once)."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import ROOT
from tests.integration.stack import Hub

MAKE_APPLICATION = """
import django, secrets, sys; django.setup()
from oauth2_provider.models import Application
secret = secrets.token_urlsafe(24)
app = Application.objects.create(name=sys.argv[1], client_type="confidential",
    authorization_grant_type="client-credentials", client_secret=secret)
print(app.client_id, secret)
"""


def application(hub: Hub, name: str) -> tuple[str, str]:
    """A client-credentials application's client id and secret."""
    done = subprocess.run([sys.executable, "-c", MAKE_APPLICATION, name], cwd=ROOT, env=hub.env,
                          capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    client_id, secret = done.stdout.split()[-2:]
    return client_id, secret
