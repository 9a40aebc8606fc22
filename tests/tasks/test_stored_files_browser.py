"""In Chromium: a script anyone stored as a message part, loaded as a `<script>` on the admin's
own origin (the step an HTML injection would take to beat its Content-Security-Policy), does
not run; a stored PNG still shows as an image."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from executors.demo_skills import draw_png
from tests.browser import chromium
from tests.tasks.test_stored_files import SCRIPT, stored_file

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LOAD_SCRIPT = """url => new Promise(done => {
    const script = document.createElement("script");
    script.src = url;
    script.onload = () => done("loaded");
    script.onerror = () => done("refused");
    document.head.appendChild(script);
})"""
LOAD_IMAGE = """url => new Promise(done => {
    const image = new Image();
    image.onload = () => done(image.naturalWidth);
    image.onerror = () => done(0);
    image.src = url;
})"""


def test_a_stored_script_does_not_run_on_the_admins_origin(
    live_server: Any, agent_factory: Any
) -> None:
    User.objects.create_superuser("op", "op@example.com", "operator-pass-123")
    agent = agent_factory("files", default_input_modes=["*/*"])
    script_url = stored_file(agent, SCRIPT, "text/javascript", "evil.js")
    image_url = stored_file(agent, draw_png(), "image/png", "tiles.png")
    with chromium() as browser:
        page = browser.new_page()
        page.goto(f"{live_server.url}/admin/")
        page.fill("#id_username", "op")
        page.fill("#id_password", "operator-pass-123")
        page.click("input[type=submit]")
        page.wait_for_selector("#site-name")

        outcome = page.evaluate(LOAD_SCRIPT, script_url)

        assert outcome == "refused"
        assert page.evaluate("window.ran === undefined")
        assert page.title() != "ran"
        assert page.evaluate(LOAD_IMAGE, image_url) > 0
