"""The chat console in a real browser, against a real hub process: daphne in embedded mode
(SQLite, worker jobs on the process's own threads) with the demo agents seeded, since the test
server of pytest-django would hand the page a stream only once it has ended.

Each test saves a screenshot under $A2AHUB_SCREENSHOTS (a temporary folder by default) and
prints its path.

Personas: `dev` (tests/browser.py's sign-in), a signed-in user who owns none of the demo
agents; they are listed and take any caller, so dev may chat with them all.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from executors.demo_skills import STORY
from tests.browser import chromium, sign_in
from tests.helpers import ROOT, embedded_env, free_port, wait_for_http
from tests.streaming.server import start_daphne, stop

pytestmark = pytest.mark.browser

SCREENSHOTS = Path(
    os.environ.get("A2AHUB_SCREENSHOTS") or Path(tempfile.gettempdir()) / "a2ahub-screenshots"
)
WAIT_MS = 20_000
SETUP = """
import django
django.setup()
from django.contrib.auth.models import User
from django.core.management import call_command
call_command("migrate", interactive=False, verbosity=0)
call_command("seed_demo", verbosity=0)
User.objects.create_user("dev", "dev@example.com", "developer-pass-123")
from tests.factories.agents import make_agent
make_agent("limited", requests_per_minute=1)
"""


@dataclass(frozen=True)
class ChatHub:
    base: str
    database: Path

    def stored(self, task_id: str) -> tuple[str, str]:
        """The task's state and owner, read from the hub's database as an operator would."""
        with sqlite3.connect(self.database) as db:
            row = db.execute(
                "SELECT state, owner FROM tasks_task WHERE id = ?", (uuid.UUID(task_id).hex,)
            ).fetchone()
        assert row is not None, task_id
        return str(row[0]), str(row[1])


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatHub]:
    root = tmp_path_factory.mktemp("chat-hub")
    env = embedded_env(root / "data")
    subprocess.run([sys.executable, "-c", SETUP], cwd=ROOT, env=env, check=True, timeout=120,
                   capture_output=True)  # fmt: skip
    port, log = free_port(), root / "daphne.log"
    process = start_daphne(env, port, log)
    base = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_for_http(f"{base}/agents/echo/.well-known/agent-card.json", process)
        except (RuntimeError, TimeoutError) as exc:
            raise RuntimeError(f"{exc}\n{log.read_text(errors='replace')[-3000:]}") from exc
        yield ChatHub(base, root / "data" / "hub.sqlite3")
    finally:
        stop(process)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as running:
        yield running


@pytest.fixture
def page(browser: Browser, hub: ChatHub) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    chat_page = context.new_page()
    chat_page.set_default_timeout(WAIT_MS)
    sign_in(chat_page, hub.base)
    try:
        yield chat_page
    finally:
        context.close()


def screenshot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"chat-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")


def send(page: Page, text: str) -> None:
    page.fill("#chat-text", text)
    page.click("#chat-send")


def shown_task(page: Page) -> str:
    return page.locator("#chat-task-link").inner_text()


def watch_the_reply(page: Page) -> None:
    """Record each text the first reply's artifact shows, with the task's state then."""
    page.evaluate("""() => {
      window.seen = [];
      const log = document.getElementById("chat-log");
      new MutationObserver(() => {
        const parts = log.querySelector(".turn.agent .artifact .parts");
        if (!parts) return;
        const text = parts.textContent;
        const last = window.seen[window.seen.length - 1];
        if (!last || last[0] !== text) {
          window.seen.push([text, document.getElementById("chat-state").textContent]);
        }
      }).observe(log, {childList: true, subtree: true, characterData: true});
    }""")


def test_the_chat_streams_a_five_chunk_reply_chunk_by_chunk(page: Page, hub: ChatHub) -> None:
    page.goto(f"{hub.base}/dev/agents/toolbox/chat/")
    page.select_option("#chat-skill", "story")
    watch_the_reply(page)

    send(page, "tell me a story")

    expect(page.locator("#chat-state")).to_have_text("completed")
    whole = "".join(STORY)
    expect(page.locator(".turn.agent .artifact .parts")).to_have_text(whole)
    seen: list[list[str]] = page.evaluate("window.seen")
    before_the_end = [text for text, _ in seen if text != whole]
    # The page grew through the chunks: one, two, three, four, then the whole story.
    assert before_the_end == ["".join(STORY[:n]) for n in range(1, 5)], seen
    assert all(state == "working" for text, state in seen if text != whole), seen
    expect(page.locator(".turn.agent .statuses")).to_contain_text("Writing line 5 of 5.")
    assert hub.stored(shown_task(page))[0] == "completed"
    screenshot(page, "streamed-story")


def test_the_chat_answers_a_question_in_the_same_task(page: Page, hub: ChatHub) -> None:
    page.goto(f"{hub.base}/dev/agents/interview/chat/")

    send(page, "Hi!")
    expect(page.locator("#chat-state")).to_have_text("input-required")
    expect(page.locator(".status.question")).to_have_text("What is your name?")
    asked = shown_task(page)
    send(page, "Ada")

    expect(page.locator("#chat-state")).to_have_text("completed")
    expect(page.locator(".turn.agent").nth(1)).to_contain_text("Nice to meet you, Ada!")
    assert shown_task(page) == asked
    state, owner = hub.stored(asked)
    assert state == "completed" and owner.startswith("user:")
    screenshot(page, "question-answered")

    page.click("#chat-new")
    expect(page.locator("#chat-context")).to_have_text("new")
    send(page, "Hello again")
    expect(page.locator("#chat-state")).to_have_text("input-required")
    assert shown_task(page) != asked


def test_the_chat_cancels_a_slow_task(page: Page, hub: ChatHub) -> None:
    page.goto(f"{hub.base}/dev/agents/slow/chat/")

    send(page, "60")
    expect(page.locator(".turn.agent .statuses")).to_contain_text("1 of 60 seconds done.")
    page.click("#chat-cancel")

    expect(page.locator("#chat-state")).to_have_text("canceled")
    expect(page.locator("#chat-send")).to_be_enabled()  # the stream ended with the task
    expect(page.locator("#chat-cancel")).to_be_disabled()
    assert hub.stored(shown_task(page))[0] == "canceled"
    screenshot(page, "canceled")


def test_an_agent_over_its_rate_says_so_in_the_chat(page: Page, hub: ChatHub) -> None:
    page.goto(f"{hub.base}/dev/agents/limited/chat/")
    send(page, "once")
    expect(page.locator("#chat-state")).to_have_text("completed")

    send(page, "twice")

    expect(page.locator("#chat-error")).to_contain_text(
        "This agent takes at most 1 requests per minute from you"
    )
    expect(page.locator(".turn.agent").nth(1).locator(".pill")).to_have_text("not sent")
    expect(page.locator("#chat-send")).to_be_enabled()
    screenshot(page, "rate-limited")


def test_an_agent_that_needs_an_extension_is_not_offered_a_message(
    page: Page, hub: ChatHub
) -> None:
    page.goto(f"{hub.base}/dev/agents/tck-ext/chat/")

    expect(page.locator("#chat-extensions")).to_contain_text(
        "requires the extension urn:a2a:tck:required-extension, which this page does not speak"
    )
    expect(page.locator("#chat-send")).to_be_disabled()
    expect(page.locator("#chat-text")).to_be_disabled()
    screenshot(page, "needs-extension")


def test_the_chat_shows_an_image_artifact(page: Page, hub: ChatHub) -> None:
    page.goto(f"{hub.base}/dev/agents/toolbox/chat/")
    page.select_option("#chat-skill", "picture")

    send(page, "draw")

    expect(page.locator("#chat-state")).to_have_text("completed")
    page.wait_for_function(
        "() => { const image = document.querySelector('.part-file img');"
        " return image && image.complete && image.naturalWidth > 0; }"
    )
    assert page.locator(".part-file img").evaluate("image => image.naturalWidth") == 32
    link = page.locator(".part-file a.download")
    expect(link).to_have_text("Download tiles.png")
    assert (link.get_attribute("href") or "").startswith("/dev/agents/toolbox/chat/file/?task=")
    screenshot(page, "image")


def test_data_is_a_tree_and_hostile_text_stays_text(page: Page, hub: ChatHub) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(f"{hub.base}/dev/agents/toolbox/chat/")
    page.select_option("#chat-skill", "count")
    send(page, "one two three")
    tree = page.locator(".turn.agent details.data-tree")
    expect(tree).to_contain_text("words: 3")

    page.goto(f"{hub.base}/dev/agents/echo/chat/")
    hostile = '<img src=x onerror="alert(1)"><script>alert(2)</script><b>bold</b>'
    send(page, hostile)

    expect(page.locator("#chat-state")).to_have_text("completed")
    expect(page.locator(".turn.agent .artifact .parts")).to_have_text(hostile)
    assert page.locator("#chat-log img, #chat-log script, #chat-log b").count() == 0
    assert dialogs == []
    screenshot(page, "hostile-text")


def test_enter_sends_shift_enter_starts_a_line_and_the_page_says_so(
    page: Page, hub: ChatHub
) -> None:
    page.goto(f"{hub.base}/dev/agents/echo/chat/")
    expect(page.locator("#chat-keys")).to_have_text("Enter sends · Shift+Enter starts a new line")
    # Before any task, the cancel button is greyed and refuses the pointer.
    cancel = page.locator("#chat-cancel")
    expect(cancel).to_be_disabled()
    assert cancel.evaluate("(b) => getComputedStyle(b).cursor") == "not-allowed"
    danger_red = "rgb(179, 38, 30)"  # --hub-bad, the enabled button's colour
    assert cancel.evaluate("(b) => getComputedStyle(b).backgroundColor") != danger_red

    page.click("#chat-text")
    page.keyboard.type("first line")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("second line")
    expect(page.locator("#chat-text")).to_have_value("first line\nsecond line")
    expect(page.locator(".turn.agent")).to_have_count(0)
    page.keyboard.press("Enter")

    expect(page.locator("#chat-state")).to_have_text("completed")
    expect(page.locator(".turn.agent")).to_contain_text("second line")
    screenshot(page, "enter-sent")
