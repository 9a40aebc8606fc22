"""`llm` agents made in a running hub's own Django (so secrets are sealed with its key), and
an A2A client's view of them: blocking sends, streamed sends read frame by frame."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from tests.helpers import ROOT
from tests.integration.stack import Hub

TIMEOUT = 60.0

MAKE_AGENT = """
import django, json, sys; django.setup()
from a2ahub import sealed
from agents.models import Agent, Skill
slug, settings = sys.argv[1], json.loads(sys.argv[2])
if settings.get("api_key"):
    settings["api_key"] = sealed.seal(settings["api_key"])
for server in settings.get("mcp_servers", []):
    if server.get("token"):
        server["token"] = sealed.seal(server["token"])
agent = Agent.objects.create(slug=slug, name=slug, description="A model with tools.",
    executor_kind="llm", executor_settings=settings)
Skill.objects.create(agent=agent, skill_id="chat", name="Chat", description="Talks.",
    tags=["chat"], position=0)
"""


def make_llm_agent(hub: Hub, settings: dict[str, Any]) -> str:
    slug = f"llm-{uuid.uuid4().hex[:8]}"
    command = [sys.executable, "-c", MAKE_AGENT, slug, json.dumps(settings)]
    subprocess.run(command, cwd=ROOT, env=hub.env, capture_output=True, text=True, timeout=120,
                   check=True)  # fmt: skip
    return slug


def user_message(text: str, task_id: str = "") -> dict[str, Any]:
    message: dict[str, Any] = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER",
                               "parts": [{"text": text}]}  # fmt: skip
    if task_id:
        message["taskId"] = task_id
    return message


def rpc(base: str, slug: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = httpx.post(f"{base}/agents/{slug}/jsonrpc/", json=body,
                          headers={"A2A-Version": "1.0"}, timeout=TIMEOUT)  # fmt: skip
    answer = response.json()
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def send(base: str, slug: str, text: str, task_id: str = "") -> dict[str, Any]:
    task: dict[str, Any] = rpc(base, slug, "SendMessage", {"message": user_message(text, task_id)})[
        "task"
    ]
    return task


@contextmanager
def streamed(
    base: str, slug: str, text: str, task_id: str = ""
) -> Iterator[Iterator[dict[str, Any]]]:
    """A SendStreamingMessage's results, each as soon as its frame arrives."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
            "params": {"message": user_message(text, task_id)}}  # fmt: skip
    headers = {"A2A-Version": "1.0", "Accept": "text/event-stream"}
    with httpx.stream("POST", f"{base}/agents/{slug}/jsonrpc/", json=body, headers=headers,
                      timeout=TIMEOUT) as response:  # fmt: skip

        def results() -> Iterator[dict[str, Any]]:
            for line in response.iter_lines():
                if line.startswith("data:"):
                    frame = json.loads(line[5:])
                    assert "result" in frame, frame
                    yield frame["result"]

        yield results()


def state(task: dict[str, Any]) -> str:
    return str(task["status"]["state"]).removeprefix("TASK_STATE_").lower()


def status_text(task: dict[str, Any]) -> str:
    parts = task["status"].get("message", {}).get("parts", [])
    return "".join(part.get("text", "") for part in parts)


def answer_text(task: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for a in task.get("artifacts", []) for p in a["parts"])
