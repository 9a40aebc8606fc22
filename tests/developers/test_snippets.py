"""The copy-paste snippets on an agent's page and on the page that makes a key, through Django's
test client: that agent's URLs, the credential it asks for, a copy button each; and the import
form's example address. (tests/integration/test_snippets_real_stack.py runs them.)

Personas and their rights:
- `developer` (tests/conftest.py): owns the agents made here and makes their keys.
"""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from tests.factories.agents import SECURED, owned

pytestmark = pytest.mark.django_db


def snippet(page: str, name: str) -> str:
    found = re.search(rf'<pre id="snippet-{name}"><code>(.*?)</code></pre>', page, re.S)
    assert found is not None, f"no {name} snippet"
    return unescape(found.group(1))


def agent_page(client: Client, slug: str) -> str:
    response = client.get(reverse("developers:agent", kwargs={"slug": slug}))
    assert response.status_code == 200
    return response.content.decode()


def test_the_agent_page_has_curl_python_and_javascript_with_that_agents_urls(
    dev_client: Client, developer: User
) -> None:
    owned("parrot", developer)
    page = agent_page(dev_client, "parrot")
    curl = snippet(page, "curl")
    assert "'http://testserver/agents/parrot/jsonrpc/'" in curl
    assert "-H 'A2A-Version: 1.0'" in curl and '"method": "SendMessage"' in curl
    assert "X-API-Key" not in curl  # an agent open to anyone needs none
    python = snippet(page, "python")
    assert "AGENT_URL = 'http://testserver/agents/parrot/'" in python
    assert "create_client(AGENT_URL" in python
    javascript = snippet(page, "javascript")
    card = "http://testserver/agents/parrot/.well-known/agent-card.json"
    assert f'A2AClient.fromCardUrl(\n  "{card}"' in javascript


def test_each_snippet_has_a_copy_button(dev_client: Client, developer: User) -> None:
    owned("parrot", developer)
    page = agent_page(dev_client, "parrot")
    for name in ("curl", "python", "javascript"):
        assert f'data-copy="snippet-{name}"' in page
    assert "developers/copy.js" in page


def test_an_agent_with_a_key_scheme_gets_its_header_from_an_environment_variable(
    dev_client: Client, developer: User
) -> None:
    owned("vault", developer, **SECURED)
    page = agent_page(dev_client, "vault")
    header = SECURED["security_schemes"]["apiKey"]["name"]
    assert f'-H "{header}: $A2A_API_KEY"' in snippet(page, "curl")
    assert f"HEADERS = {{'{header}': os.environ[\"A2A_API_KEY\"]}}" in snippet(page, "python")
    assert f'"{header}": process.env.A2A_API_KEY' in snippet(page, "javascript")


def test_an_oauth2_agent_takes_a_bearer_token(dev_client: Client, developer: User) -> None:
    owned("tokens", developer, oauth2=True)
    page = agent_page(dev_client, "tokens")
    assert '-H "Authorization: Bearer $A2A_TOKEN"' in snippet(page, "curl")
    # How to get the token comes first, for this agent's scope (the page named no command).
    token = snippet(page, "token")
    assert token.startswith('export A2A_TOKEN="$(curl -sS -u "$CLIENT_ID:$CLIENT_SECRET"')
    assert "-d 'scope=agent:tokens'" in token and "'http://testserver/o/token/'" in token
    assert page.index('id="snippet-token"') < page.index('id="snippet-curl"')


def test_an_agent_taking_api_keys_shows_no_token_command(
    dev_client: Client, developer: User
) -> None:
    owned("vault", developer, **SECURED)
    assert 'id="snippet-token"' not in agent_page(dev_client, "vault")


def test_a_new_key_is_shown_once_with_a_copy_button_and_snippets_that_use_it(
    dev_client: Client, developer: User
) -> None:
    owned("vault", developer, **SECURED)
    url = reverse("developers:keys", kwargs={"slug": "vault"})
    page = dev_client.post(url, {"name": "laptop"}, follow=True).content.decode()
    secret = re.search(r'id="new-key-secret">(a2a_[^<]+)<', page)
    assert secret is not None
    assert 'data-copy="new-key-secret"' in page
    header = SECURED["security_schemes"]["apiKey"]["name"]
    assert f'-H "{header}: {secret.group(1)}"' in snippet(page, "curl")
    assert f"'{header}': '{secret.group(1)}'" in snippet(page, "python")
    assert secret.group(1) not in dev_client.get(url).content.decode()


def test_the_import_forms_hint_is_a_whole_example_address(dev_client: Client) -> None:
    page = dev_client.get(reverse("developers:agent-import")).content.decode()
    assert "/agents//" not in page
    assert "http://testserver/agents/&lt;slug&gt;/, e.g. http://testserver/agents/weather/." in page
