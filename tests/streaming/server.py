"""The hub process the streaming tests read: daphne in embedded mode (SQLite in a temporary
DATA_DIR, no Redis), with the agents below and API keys for the personas.

The server sends `: keep-alive` every SSE_HEARTBEAT_SECONDS; that is set in its environment
because a settings fixture cannot reach another process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.factories.agents import SECURED
from tests.helpers import ROOT

HEARTBEAT_SECONDS = 0.25
# The writer's essay is its topic line, then these paragraphs (executors/writer.py).
ESSAY_CHUNKS = 6
# Each agent the tests stream from: slug -> Agent fields.
AGENTS: dict[str, dict[str, Any]] = {
    "quick": {"executor_kind": "writer", "executor_settings": {"delay": 0.02}},
    "essay": {"executor_kind": "writer", "executor_settings": {"delay": 0.3}},
    "idle": {"executor_kind": "writer", "executor_settings": {"delay": 1.5}},
    "mute": {"executor_kind": "echo", "streaming": False},
    "tck": {"executor_kind": "conformance"},
    "private": {"executor_kind": "writer", "executor_settings": {"delay": 0.3}, **SECURED},
}
SETUP_SCRIPT = """
import json, sys
import django
django.setup()
from django.core.management import call_command
from agents.models import Agent, ApiKey
call_command("migrate", interactive=False, verbosity=0)
for slug, fields in json.loads(sys.argv[1]).items():
    Agent.objects.create(slug=slug, name=slug.title(), description=f"The {slug} agent.", **fields)
print(json.dumps({name: ApiKey.issue(name)[1] for name in ("caller", "stranger")}))
"""


@dataclass
class StreamServer:
    """One running hub: its base URL and the API keys of the personas."""

    base: str
    keys: dict[str, str] = field(default_factory=dict)


def prepare(env: dict[str, str]) -> dict[str, str]:
    """Migrate, create the test agents and issue the personas' keys in one process."""
    done = subprocess.run(
        [sys.executable, "-c", SETUP_SCRIPT, json.dumps(AGENTS)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"setting up the hub failed:\n{done.stdout}\n{done.stderr}")
    keys: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return keys


def start_daphne(env: dict[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "a2ahub.daphne", "-b", "127.0.0.1", "-p", str(port)]
    with log.open("wb") as out:
        return subprocess.Popen(
            [*command, "a2ahub.asgi:application"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
