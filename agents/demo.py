"""The demo agents a fresh hub starts with; `seed_demo` writes them, later issues add theirs."""

from __future__ import annotations

from typing import Any

API_KEY_SCHEME = {"apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"}}

DEMO_AGENTS: list[dict[str, Any]] = [
    {
        "slug": "echo",
        "name": "Echo",
        "description": "Answers every message with an artifact that repeats its parts.",
        "executor_kind": "echo",
        "default_input_modes": ["text/plain", "application/json", "application/octet-stream"],
        "default_output_modes": ["text/plain", "application/json", "application/octet-stream"],
        "provider_organization": "A2A Hub",
        "provider_url": "https://github.com/a2aproject",
        "skills": [
            {
                "skill_id": "echo",
                "name": "Echo",
                "description": "Repeats text, files and data back to the caller.",
                "tags": ["echo", "test"],
                "examples": ["Hello, echo!"],
            }
        ],
    },
]
