"""The chat console as the page uses it, for tests: its URLs, reading its event stream, and
signing in over real HTTP (a running hub) to post to it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import httpx

PASSWORD = "developer-pass-123"
CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def chat_url(slug: str, view: str = "") -> str:
    return f"/dev/agents/{slug}/chat/{view + '/' if view else ''}"


def frames(text: str) -> list[tuple[str, dict[str, Any]]]:
    """Every frame of a whole stream: (event name, data)."""
    return [frame for block in text.split("\n\n") if (frame := parse_frame(block))]


def parse_frame(block: str) -> tuple[str, dict[str, Any]] | None:
    name, data = "message", []
    for line in block.splitlines():
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            data.append(line[len("data: ") :])
    return (name, json.loads("\n".join(data))) if data else None


def lines_to_frames(lines: Iterable[str]) -> Iterable[tuple[str, dict[str, Any]]]:
    """Frames as they arrive, from a stream read line by line."""
    block: list[str] = []
    for line in lines:
        if line:
            block.append(line)
            continue
        frame = parse_frame("\n".join(block))
        block = []
        if frame is not None:
            yield frame


def states(events: list[tuple[str, dict[str, Any]]]) -> list[str]:
    found = []
    for _, event in events:
        status = (event.get("task") or event.get("statusUpdate") or {}).get("status", {})
        if status.get("state"):
            found.append(status["state"].removeprefix("TASK_STATE_").lower().replace("_", "-"))
    return found


def chunks(events: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """The text of each artifact chunk, in order."""
    return ["".join(part.get("text", "") for part in event["artifactUpdate"]["artifact"]["parts"])
            for _, event in events if "artifactUpdate" in event]  # fmt: skip


def task_id_of(events: list[tuple[str, dict[str, Any]]]) -> str:
    for _, event in events:
        if "task" in event:
            return str(event["task"]["id"])
        if "statusUpdate" in event:
            return str(event["statusUpdate"]["taskId"])
    raise AssertionError(f"no task in {events}")


def signed_in(base: str, username: str, password: str = PASSWORD) -> httpx.Client:
    """An HTTP client of a running hub with the user's session, as a browser holds it."""
    http = httpx.Client(base_url=base, timeout=30)
    page = http.get("/dev/login/")
    token = CSRF_FIELD.search(page.text)
    assert token is not None, page.text
    answer = http.post("/dev/login/", data={"username": username, "password": password,
                                             "csrfmiddlewaretoken": token.group(1)})  # fmt: skip
    assert answer.status_code == 302, answer.text
    return http


def form_token(http: httpx.Client, slug: str) -> str:
    """The CSRF token of the chat page's form."""
    page = http.get(chat_url(slug))
    assert page.status_code == 200, page.text
    token = CSRF_FIELD.search(page.text)
    assert token is not None
    return token.group(1)
