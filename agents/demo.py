"""The demo agents a fresh hub starts with; `seed_demo` writes them, later issues add theirs."""

from __future__ import annotations

from typing import Any

# The kit sends parts of made-up media types and expects them taken, so this agent takes all.
CONFORMANCE_MODES = ["text/plain", "application/json", "application/octet-stream", "*/*"]
CONFORMANCE_SKILL = {
    "skill_id": "conformance",
    "name": "Conformance scenarios",
    "description": "Runs the scenario named by the messageId prefix (tck-<scenario>-<hex>).",
    "tags": ["conformance", "tck"],
    "examples": ["tck-complete-task-0001"],
}

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
    {
        "slug": "tck",
        "name": "TCK conformance agent",
        "description": "Behaves as the A2A conformance kit expects, scenario by scenario.",
        "executor_kind": "conformance",
        "default_input_modes": CONFORMANCE_MODES,
        "default_output_modes": CONFORMANCE_MODES,
        "push_notifications": True,
        "skills": [CONFORMANCE_SKILL],
    },
    {
        "slug": "tck-ext",
        "name": "TCK conformance agent (required extension)",
        "description": "The conformance agent, declaring an extension every caller must use.",
        "executor_kind": "conformance",
        "default_input_modes": CONFORMANCE_MODES,
        "default_output_modes": CONFORMANCE_MODES,
        "extensions": [
            {
                "uri": "urn:a2a:tck:required-extension",
                "description": "The conformance kit's required extension.",
                "required": True,
            }
        ],
        "skills": [CONFORMANCE_SKILL],
    },
    {
        "slug": "interview",
        "name": "Interviewer",
        "description": "Asks for your name, then greets you: a two-turn conversation.",
        "executor_kind": "interview",
        "skills": [
            {
                "skill_id": "greet",
                "name": "Greet",
                "description": "Asks a question and answers the reply.",
                "tags": ["multi-turn", "demo"],
                "examples": ["Hi!", "Ada"],
            }
        ],
    },
    {
        "slug": "slow",
        "name": "Slow worker",
        "description": "Works for as many seconds as you ask, reporting progress; cancellable.",
        "executor_kind": "slow",
        "skills": [
            {
                "skill_id": "wait",
                "name": "Wait",
                "description": "Works for N seconds (default 5).",
                "tags": ["long-running", "demo"],
                "examples": ["10"],
            }
        ],
    },
    {
        "slug": "writer",
        "name": "Writer",
        "description": "Streams a short essay on your topic, chunk by chunk, with progress.",
        "executor_kind": "writer",
        "skills": [
            {
                "skill_id": "essay",
                "name": "Essay",
                "description": "Writes a few paragraphs on the topic you send.",
                "tags": ["streaming", "demo"],
                "examples": ["the sea"],
            }
        ],
    },
    {
        "slug": "toolbox",
        "name": "Toolbox",
        "description": "Small tools written as Python functions: reverse, count, count down, "
        "tell a story in five chunks, draw a picture.",
        "executor_kind": "python",
        "executor_settings": {
            "functions": {
                "reverse": "demo.reverse",
                "count": "demo.word_count",
                "countdown": "demo.countdown",
                "story": "demo.story",
                "picture": "demo.picture",
            }
        },
        "default_output_modes": ["text/plain", "application/json", "image/png"],
        "skills": [
            {
                "skill_id": "reverse",
                "name": "Reverse",
                "description": "Sends your text back, backwards.",
                "tags": ["text", "python"],
                "examples": ["stressed"],
            },
            {
                "skill_id": "count",
                "name": "Count",
                "description": "Counts the words and characters of your text.",
                "tags": ["text", "python"],
                "examples": ["one two three"],
            },
            {
                "skill_id": "countdown",
                "name": "Countdown",
                "description": "Streams a countdown from the number you send.",
                "tags": ["streaming", "python"],
                "examples": ["5"],
            },
            {
                "skill_id": "story",
                "name": "Story",
                "description": "Streams a short story in five chunks, one every half second.",
                "tags": ["streaming", "python"],
                "examples": ["tell me a story"],
            },
            {
                "skill_id": "picture",
                "name": "Picture",
                "description": "Answers with a small PNG image drawn by code.",
                "tags": ["file", "image", "python"],
                "examples": ["draw"],
                "output_modes": ["image/png"],
            },
        ],
    },
    {
        "slug": "orchestrator",
        "name": "Orchestrator",
        "description": "Hands your message to the echo and toolbox agents over A2A, and "
        "answers with what they made.",
        "executor_kind": "orchestrator",
        "executor_settings": {"agents": ["echo", "toolbox"]},
        "skills": [
            {
                "skill_id": "fan-out",
                "name": "Fan out",
                "description": "Sends your text to other hosted agents and combines their results.",
                "tags": ["orchestration", "demo"],
                "examples": ["stressed"],
            }
        ],
    },
    {
        # Any application's client-credentials token with the default scope (a2a:invoke)
        # may call it; an API key or no credential may not.
        "slug": "secure",
        "name": "Secure echo",
        "description": "Echoes, for callers with an OAuth2 bearer token from this hub.",
        "executor_kind": "echo",
        "oauth2": True,
        "access": "signed_in",
        "skills": [
            {
                "skill_id": "echo",
                "name": "Echo",
                "description": "Repeats text, files and data back to the caller.",
                "tags": ["echo", "oauth2"],
                "examples": ["Hello, securely!"],
            }
        ],
    },
]


ASSISTANT_SLUG = "assistant"
ASSISTANT_DESCRIPTION = "A model with instructions, using the echo and toolbox agents as tools."
ASSISTANT_NEEDS = (
    "Disabled: set LLM_BASE_URL and LLM_MODEL (LLM_API_KEY optional) and run seed_demo again."
)


def assistant_agent(base_url: str, model: str) -> dict[str, Any]:
    """The `llm` demo: enabled when the hub names a model server (LLM_BASE_URL, LLM_MODEL),
    otherwise disabled, its description saying why. Its key is sealed by seed_demo."""
    enabled = bool(base_url and model)
    return {
        "slug": ASSISTANT_SLUG,
        "name": "Assistant",
        "description": ASSISTANT_DESCRIPTION
        if enabled
        else f"{ASSISTANT_DESCRIPTION} {ASSISTANT_NEEDS}",
        "executor_kind": "llm",
        "enabled": enabled,
        "executor_settings": {
            "base_url": base_url or "http://127.0.0.1:11434/v1",
            "model": model or "llama3.2",
            "instructions": "You are the A2A Hub's demo assistant. Answer briefly. Use the echo "
            "agent to repeat text and the toolbox agent for its tools when they help.",
            "max_steps": 5,
            "timeout": 60,
            "agents": ["echo", "toolbox"],
        },
        "skills": [
            {
                "skill_id": "chat",
                "name": "Chat",
                "description": "Answers questions, calling the echo and toolbox agents as tools.",
                "tags": ["llm", "chat", "demo"],
                "examples": ["What can you do?", "Reverse the word stressed with your tools."],
            }
        ],
    }
