"""The copy-paste snippets run as shown, against a hub of one web process and one Celery worker
on PostgreSQL and Redis: the curl and Python (a2a-sdk) snippets are read out of the agent's
page as a signed-in developer sees it, run as they are (curl in a shell, Python in a fresh
interpreter), and bring back the agent's answer; those shown with a new key use that key.

Persona: a developer made here (not staff) who owns `<name>-vault`, an echo agent that needs
an API key; the demo agent `echo` takes anyone, so its page is a read-only one for them.
(The JavaScript snippet is only shown: it needs node and @a2a-js/sdk.)
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import httpx
import pytest

from tests.developers.chat_client import CSRF_FIELD, signed_in
from tests.helpers import ROOT
from tests.integration.small_hub import own_small_hub
from tests.integration.stack import Hub

pytestmark = pytest.mark.integration

PASSWORD = "snippet-pass-123"
SETUP = """
import sys
import django
django.setup()
from django.contrib.auth.models import User
from agents.models import Agent, Skill
name = sys.argv[1]
owner = User.objects.create_user(name, "", sys.argv[2])
scheme = {"apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"}}
agent = Agent.objects.create(slug=f"{name}-vault", name="Vault", description="Echoes.",
                             executor_kind="echo", owner=owner, security_schemes=scheme,
                             security_requirements=[{"apiKey": []}])
Skill.objects.create(agent=agent, skill_id="echo", name="Echo", description="Echoes.",
                     tags=["demo"])
locked = Agent.objects.create(slug=f"{name}-locked", name="Locked", description="Echoes.",
                              executor_kind="echo", owner=owner, oauth2=True)
Skill.objects.create(agent=locked, skill_id="echo", name="Echo", description="Echoes.",
                     tags=["demo"])
from oauth2_provider.models import Application
app = Application.objects.create(
    name="robot", user=owner, client_type=Application.CLIENT_CONFIDENTIAL,
    authorization_grant_type=Application.GRANT_CLIENT_CREDENTIALS, client_secret=sys.argv[3],
)
print(app.client_id)
"""
RUN_SECONDS = 120


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """(Named `hub`, as the session's is: a failing test's report then carries its logs.)"""
    with own_small_hub("snippets", tmp_path_factory.mktemp("snippets")) as running:
        yield running


CLIENT_SECRET = "snippet-client-secret-0123456789"


@pytest.fixture(scope="module")
def made(hub: Hub) -> tuple[str, str]:
    """The developer's name and their client-credentials application's client id."""
    name = f"dev-{uuid.uuid4().hex[:8]}"
    done = subprocess.run([sys.executable, "-c", SETUP, name, PASSWORD, CLIENT_SECRET], cwd=ROOT,
                          env=hub.env, check=True, timeout=RUN_SECONDS, capture_output=True,
                          text=True)  # fmt: skip
    return name, done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def developer(made: tuple[str, str]) -> str:
    return made[0]


def snippet(page: str, name: str) -> str:
    found = re.search(rf'<pre id="snippet-{name}"><code>(.*?)</code></pre>', page, re.S)
    assert found is not None, f"no {name} snippet on the page"
    return unescape(found.group(1))


def run_curl(code: str, env: dict[str, str] | None = None) -> dict[str, object]:
    done = subprocess.run(["bash", "-c", code], capture_output=True, text=True,
                          timeout=RUN_SECONDS, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


def run_python(code: str, env: dict[str, str] | None = None) -> str:
    # A directory of its own: the snippet imports the SDK as any project would, not the hub.
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=RUN_SECONDS, env=env, cwd="/")  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def echoed(answer: dict[str, object]) -> list[str]:
    task = answer["result"]["task"]  # type: ignore[index]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", answer  # type: ignore[index]
    return [part["text"] for artifact in task["artifacts"] for part in artifact["parts"]]  # type: ignore[index]


def test_the_curl_and_python_snippets_on_an_agents_page_run_as_shown(
    hub: Hub, developer: str
) -> None:
    page = session(hub, developer).get("/dev/agents/echo/")
    assert page.status_code == 200
    assert echoed(run_curl(snippet(page.text, "curl"))) == ["Hello!"]
    printed = run_python(snippet(page.text, "python"))
    assert '"TASK_STATE_COMPLETED"' in printed and '"text": "Hello!"' in printed


def test_the_snippets_shown_with_a_new_key_run_as_shown_with_that_key(
    hub: Hub, developer: str
) -> None:
    slug = f"{developer}-vault"
    made = new_key_page(hub, developer, slug)
    assert made.status_code == 200 and 'id="new-key-secret"' in made.text
    assert echoed(run_curl(snippet(made.text, "curl"))) == ["Hello!"]
    printed = run_python(snippet(made.text, "python"))
    assert '"TASK_STATE_COMPLETED"' in printed and '"text": "Hello!"' in printed


def test_the_agent_pages_snippets_read_the_key_from_the_environment(
    hub: Hub, developer: str
) -> None:
    slug = f"{developer}-vault"
    page = session(hub, developer).get(f"/dev/agents/{slug}/")
    curl = snippet(page.text, "curl")
    refused = subprocess.run(["bash", "-c", curl], capture_output=True, text=True,
                             timeout=RUN_SECONDS, env={"PATH": "/usr/bin:/bin"})  # fmt: skip
    assert "error" in json.loads(refused.stdout)  # no key, no answer
    key = make_key(hub, developer, slug)
    env = {"PATH": "/usr/bin:/bin", "A2A_API_KEY": key}
    assert echoed(run_curl(curl, env)) == ["Hello!"]
    printed = run_python(snippet(page.text, "python"), env)
    assert '"text": "Hello!"' in printed


def test_an_oauth2_only_agents_page_shows_how_to_get_the_token_its_snippets_use(
    hub: Hub, made: tuple[str, str]
) -> None:
    developer, client_id = made
    page = session(hub, developer).get(f"/dev/agents/{developer}-locked/").text
    # The token command, then the call, in one shell: as a reader pastes them one after other.
    both = snippet(page, "token") + "\n" + snippet(page, "curl")
    python_dir = str(Path(sys.executable).parent)
    env = {"PATH": f"/usr/bin:/bin:{python_dir}", "CLIENT_ID": client_id,
           "CLIENT_SECRET": CLIENT_SECRET}  # fmt: skip

    assert echoed(run_curl(both, env)) == ["Hello!"]


def session(hub: Hub, developer: str) -> httpx.Client:
    return signed_in(hub.web_a, developer, PASSWORD)


def new_key_page(hub: Hub, developer: str, slug: str) -> httpx.Response:
    """The keys page as it answers the form that makes a key: the one time the key is shown."""
    http = session(hub, developer)
    token = CSRF_FIELD.search(http.get(f"/dev/agents/{slug}/keys/").text)
    assert token is not None
    return http.post(f"/dev/agents/{slug}/keys/",
                     data={"name": "laptop", "csrfmiddlewaretoken": token.group(1)},
                     follow_redirects=True)  # fmt: skip


def make_key(hub: Hub, developer: str, slug: str) -> str:
    found = re.search(r'id="new-key-secret">(a2a_[^<]+)<', new_key_page(hub, developer, slug).text)
    assert found is not None
    return found.group(1)


def test_an_unsigned_visitor_cannot_read_the_agent_page(hub: Hub) -> None:
    answer = httpx.get(f"{hub.web_a}/dev/agents/echo/", timeout=30, follow_redirects=False)
    assert answer.status_code == 302
