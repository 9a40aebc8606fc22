"""Playwright with Debian's Chromium, as the machines provide it (no browser downloads), and the
steps on the developer pages that several browser tests take."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Browser, Page, expect, sync_playwright

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def chromium() -> Iterator[Browser]:
    # Playwright's sync API runs an event loop; Django would then refuse ORM calls made by
    # the test itself between page actions.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield browser
        finally:
            browser.close()


def sign_in(page: Page, base: str) -> None:
    """Sign in as the `developer` persona (tests/conftest.py) and land on their agents."""
    page.goto(f"{base}/dev/login/")
    page.fill("#id_username", "dev")
    page.fill("#id_password", "developer-pass-123")
    page.click("#login-form button[type=submit]")
    expect(page.locator("h1")).to_have_text("My agents")


def sign_in_admin(page: Page, base: str, username: str, password: str) -> None:
    """Sign in to the admin as an operator and land on its index."""
    page.goto(f"{base}/admin/login/?next=/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    expect(page.locator("#site-name")).to_contain_text("A2A Hub")


def screenshot(page: Page, name: str, tmp_path: Path) -> None:
    """A whole-page screenshot, kept in A2AHUB_SCREENSHOTS when set (to look at as a user)."""
    folder = Path(os.environ.get("A2AHUB_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")


def fill_skill(page: Page, n: int, skill_id: str, name: str) -> None:
    """Fill the register form's `n`th skill."""
    page.fill(f"#id_skills-{n}-skill_id", skill_id)
    page.fill(f"#id_skills-{n}-name", name)
    page.fill(f"#id_skills-{n}-description", f"The {name} skill.")
    add_tags(page, f"#id_skills-{n}-tags", "demo")


def add_tags(page: Page, field: str, text: str) -> None:
    """Type `text` into a tag-chip input (`field` is the posted input's selector) and press
    Enter, as a person adds tags."""
    page.fill(f"{field}-entry", text)
    page.press(f"{field}-entry", "Enter")


def json_inputs(page: Page, form: str) -> list[str]:
    """The names of the boxes in `form` that ask for JSON: a `json` textarea, or a box whose
    value is a JSON list or object. Hidden settings of other executor kinds count too."""
    found: list[str] = page.locator(f"{form} textarea, {form} input[type=text]").evaluate_all(
        """boxes => boxes.filter((box) => box.classList.contains("json")
              || ["[", "{"].includes(box.value.trim().charAt(0))).map((box) => box.name)"""
    )
    return found
