"""An `llm` agent made in the developer form and chatted with in the chat console, in a real
browser, against a real hub process (daphne, embedded) and an OpenAI-compatible server on
127.0.0.1: the "Check the server" button lists its models, and the answer streams into the
page (the server holds the rest of it until the page shows the first chunk).

Personas: `dev` (tests/browser.py's sign-in) registers the agent, so owns it."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser import chromium, sign_in
from tests.developers.test_chat_browser import SETUP, screenshot
from tests.helpers import ROOT, embedded_env, free_port, wait_for_http
from tests.llm.model_server import ModelServer, Text
from tests.streaming.server import start_daphne, stop

pytestmark = pytest.mark.browser

WAIT_MS = 20_000


@pytest.fixture(scope="module")
def models() -> Iterator[ModelServer]:
    server = ModelServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("llm-chat-hub")
    env = embedded_env(root / "data") | {"OUTBOUND_ALLOWED_HOSTS": "127.0.0.1"}
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
        yield base
    finally:
        stop(process)


@pytest.fixture
def page(hub: str) -> Iterator[Page]:
    with chromium() as browser:
        yield signed_in(browser, hub)


def signed_in(browser: Browser, base: str) -> Page:
    context = browser.new_context(viewport={"width": 1100, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    sign_in(page, base)
    return page


def test_an_llm_agent_made_in_the_form_streams_its_answer_in_the_chat(
    page: Page, hub: str, models: ModelServer
) -> None:
    gate = threading.Event()
    models.script("tiny-model", Text(["Bonjour", " from", " the model."], gate=gate))

    page.goto(f"{hub}/dev/register/")
    page.fill("#id_slug", "helper")
    page.fill("#id_name", "Helper")
    page.fill("#id_description", "A model with instructions.")
    page.select_option("#id_executor_kind", "llm")
    page.fill("#id_settings-llm-base_url", models.url)
    page.fill("#id_settings-llm-model", "tiny-modle")
    page.click("#settings-llm button.llm-check")
    result = page.locator("#settings-llm .llm-check-result")
    expect(result).to_have_text(
        "The server answers: 1 model(s): tiny-model. It does not list tiny-modle, the model "
        "typed here."
    )
    expect(result).to_have_class(re.compile(r"\berror\b"))
    expect(result).to_have_css("color", "rgb(186, 33, 33)")  # red, not a hint's grey
    page.fill("#id_settings-llm-model", "tiny-model")
    page.click("#settings-llm button.llm-check")
    expect(result).to_have_text("The server answers: 1 model(s): tiny-model.")
    expect(result).not_to_have_class(re.compile(r"\berror\b"))
    page.fill("#id_settings-llm-instructions", "Answer in French first.")
    page.fill("#id_settings-llm-api_key", "sk-browser-secret")
    page.check("#id_settings-llm-agents input[value=echo]")
    page.fill("#id_skills-0-skill_id", "chat")
    page.fill("#id_skills-0-name", "Chat")
    page.fill("#id_skills-0-description", "Talks.")
    page.fill("#id_skills-0-tags-entry", "chat")
    page.click("#agent-form button[type=submit]")
    expect(page.locator("body")).to_contain_text("Agent helper is registered.")
    assert "sk-browser-secret" not in page.content()

    page.goto(f"{hub}/dev/agents/helper/chat/")
    page.fill("#chat-text", "Say hello")
    page.click("#chat-send")
    answer = page.locator("#chat-log .turn.agent .artifact .parts").first
    expect(answer).to_have_text("Bonjour")  # the first chunk, while the model holds the rest
    gate.set()
    expect(answer).to_have_text("Bonjour from the model.")
    expect(page.locator("#chat-state")).to_contain_text("completed")
    screenshot(page, "llm-stream")

    request = models.seen["tiny-model"][0]
    assert request.headers["authorization"] == "Bearer sk-browser-secret"
    assert request.body["messages"][0] == {"role": "system", "content": "Answer in French first."}
