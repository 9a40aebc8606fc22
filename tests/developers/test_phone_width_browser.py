"""The public and developer pages on a phone, in a real browser (390 px wide): no page scrolls
sideways; a wide table or an Agent Card scrolls inside its own box, and the tabs wrap.

Each page is saved as a screenshot: in `A2AHUB_SCREENSHOTS` when set, else in the test's
temporary directory (`pytest -s` prints the path).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from tests.browser import chromium, screenshot, sign_in
from tests.factories.agents import owned
from tests.factories.oauth import machine
from tests.factories.tasks import ended, open_task

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
SLUG = "a-weather-agent-with-a-long-slug"
PAGES = [
    "/",
    "/dev/agents/",
    f"/dev/agents/{SLUG}/",
    f"/dev/agents/{SLUG}/tasks/",
    f"/dev/agents/{SLUG}/keys/",
    f"/dev/agents/{SLUG}/access/",
    "/dev/applications/",
]


def test_no_page_scrolls_sideways_on_a_phone(
    live_server: Any, developer: User, tmp_path: Path
) -> None:
    agent = owned(SLUG, developer, name="Weather for every city of the world, hour by hour")
    open_task(agent, ended(), owner=f"user:{developer.pk}")
    machine("a-robot-application-with-a-long-name", owner=developer)

    with chromium() as browser:
        page = browser.new_page(viewport=PHONE)
        sign_in(page, live_server.url)
        for path in PAGES:
            page.goto(f"{live_server.url}{path}")
            screenshot(page, "phone" + path.replace("/", "_").rstrip("_"), tmp_path)
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= PHONE["width"], f"{path} is {width} px wide"
