"""Every link a user sees on the home page and the developer pages answers 200 for that user: a
crawler follows them from the home page through the developer pages (and fetches, without
following further, the links that leave them: cards, the catalog, the admin).

Personas and their rights:
- anonymous: sees the public agents and their cards.
- `developer` (tests/conftest.py): owns `mine` (with tasks, keys and a file in an artifact);
  calls the demo agents that take any caller, and sees no chat for `secure` (OAuth2 only)
  or for `closed` (listed, not for them).
- `operator` (tests/conftest.py): staff; calls and sees every agent, and links to the admin.
"""

from __future__ import annotations

import re
from collections import deque
from html import unescape
from io import StringIO
from urllib.parse import urldefrag, urlsplit

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from agents.models import ApiKey
from tests.factories.agents import owned
from tests.factories.tasks import ended, open_task, report_artifact

pytestmark = pytest.mark.django_db

HREF = re.compile(r'<a\s[^>]*?href="([^"]*)"')  # links, not stylesheets
MAX_PAGES = 400


@pytest.fixture
def world(developer: User) -> None:
    """The demo agents, the developer's agent with tasks and a key, and a rival's closed one."""
    call_command("seed_demo", stdout=StringIO())
    rival = User.objects.create_user("rival", "", "rival-pass-123")
    mine = owned("mine", developer)
    ApiKey.issue("laptop", developer, mine)
    open_task(mine, [report_artifact(), *ended()], owner=f"user:{developer.pk}")
    open_task(mine, ended(), owner=f"user:{rival.pk}", context_id="ctx-2")
    closed = owned("closed", rival, access="listed", public=True)
    open_task(closed, ended(), owner=f"user:{rival.pk}", context_id="ctx-3")


def local_path(href: str) -> str | None:
    """The link's path and query on this hub, or None for another site, a fragment, mailto."""
    url, _ = urldefrag(unescape(href))
    parts = urlsplit(url)
    if parts.scheme not in ("", "http", "https") or parts.netloc not in ("", "testserver"):
        return None
    if not parts.path:
        return None
    return parts.path + (f"?{parts.query}" if parts.query else "")


def crawled(client: Client) -> dict[str, int]:
    """Every link reached from the home page, with the status it answered."""
    seen: dict[str, int] = {}
    queue = deque(["/"])
    while queue and len(seen) < MAX_PAGES:
        path = queue.popleft()
        if path in seen:
            continue
        response = client.get(path)
        seen[path] = response.status_code
        if response.status_code != 200 or not is_followed(path, response):
            continue
        for href in HREF.findall(response.content.decode()):
            link = local_path(href)
            if link is not None and link not in seen:
                queue.append(link)
    return seen


def is_followed(path: str, response: object) -> bool:
    """Pages whose links are crawled too: the home page and the developer pages."""
    html = "text/html" in response["Content-Type"]  # type: ignore[index]
    return html and (path == "/" or path.startswith("/dev/")) and "/file/" not in path


def broken(seen: dict[str, int]) -> dict[str, int]:
    return {path: status for path, status in seen.items() if status != 200}


def test_every_link_answers_200_for_an_anonymous_visitor(client: Client, world: None) -> None:
    seen = crawled(client)
    assert broken(seen) == {}
    assert "/agents/echo/.well-known/agent-card.json" in seen


def test_every_link_answers_200_for_a_developer(dev_client: Client, world: None) -> None:
    seen = crawled(dev_client)
    assert broken(seen) == {}
    # The crawl reached the pages that matter, and no page of what the developer may not use.
    assert {"/dev/agents/mine/", "/dev/agents/mine/keys/", "/dev/agents/echo/"} <= set(seen)
    assert any(re.fullmatch(r"/dev/agents/mine/tasks/[0-9a-f-]{36}/", p) for p in seen)
    assert any(re.fullmatch(r"/dev/agents/mine/tasks/[0-9a-f-]{36}/file/\?.*", p) for p in seen)
    assert "/dev/agents/secure/chat/" not in seen
    assert not any(p.startswith("/dev/agents/closed/") for p in seen)


def test_every_link_answers_200_for_staff(operator_client: Client, world: None) -> None:
    seen = crawled(operator_client)
    assert broken(seen) == {}
    assert {"/dev/agents/secure/", "/dev/agents/closed/", "/admin/"} <= set(seen)
    assert any(re.fullmatch(r"/dev/agents/closed/tasks/[0-9a-f-]{36}/", p) for p in seen)


def test_the_home_page_offers_a_chat_only_for_agents_the_developer_may_call(
    dev_client: Client, world: None
) -> None:
    page = dev_client.get("/").content.decode()
    assert 'href="/dev/agents/echo/chat/"' in page
    assert 'href="/dev/agents/secure/chat/"' not in page
    assert 'href="/dev/agents/closed/chat/"' not in page


def test_an_agent_the_developer_may_call_but_not_own_has_a_read_only_page(
    dev_client: Client, world: None
) -> None:
    response = dev_client.get("/dev/agents/echo/")
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="try-form"' not in page
    assert "/dev/agents/echo/edit/" not in page and "/dev/agents/echo/keys/" not in page
    assert 'id="snippet-curl"' in page
    assert dev_client.get("/dev/agents/echo/chat/").status_code == 200
