"""The demo agents a fresh hub starts with; `seed_demo` writes them, later issues add theirs."""

from __future__ import annotations

from typing import Any

# The kit sends parts of made-up media types and expects them taken, so this agent takes all.
CONFORMANCE_MODES = ["text/plain", "application/json", "application/octet-stream", "*/*"]


def skill(skill_id: str, name: str, description: str, tags: list[str], examples: list[str],
          **more: Any) -> dict[str, Any]:  # fmt: skip
    return {"skill_id": skill_id, "name": name, "description": description, "tags": tags,
            "examples": examples, **more}  # fmt: skip


CONFORMANCE_SKILL = skill("conformance", "Conformance scenarios",
                          "Runs the scenario named by the messageId prefix (tck-<scenario>-<hex>).",
                          ["conformance", "tck"], ["tck-complete-task-0001"])  # fmt: skip

# The skills compact, a line or two each, as `skill` takes them.
# fmt: off
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
            skill("echo", "Echo", "Repeats text, files and data back to the caller.",
                  ["echo", "test"], ["Hello, echo!"])
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
            skill("greet", "Greet", "Asks a question and answers the reply.",
                  ["multi-turn", "demo"], ["Hi!", "Ada"])
        ],
    },
    {
        "slug": "slow",
        "name": "Slow worker",
        "description": "Works for as many seconds as you ask, reporting progress; cancellable.",
        "executor_kind": "slow",
        "skills": [
            skill("wait", "Wait", "Works for N seconds (default 5).",
                  ["long-running", "demo"], ["10"])
        ],
    },
    {
        "slug": "writer",
        "name": "Writer",
        "description": "Streams a short essay on your topic, chunk by chunk, with progress.",
        "executor_kind": "writer",
        "skills": [
            skill("essay", "Essay", "Writes a few paragraphs on the topic you send.",
                  ["streaming", "demo"], ["the sea"])
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
            skill("reverse", "Reverse", "Sends your text back, backwards.",
                  ["text", "python"], ["stressed"]),
            skill("count", "Count", "Counts the words and characters of your text.",
                  ["text", "python"], ["one two three"]),
            skill("countdown", "Countdown", "Streams a countdown from the number you send.",
                  ["streaming", "python"], ["5"]),
            skill("story", "Story", "Streams a short story in five chunks, one every half second.",
                  ["streaming", "python"], ["tell me a story"]),
            skill("picture", "Picture", "Answers with a small PNG image drawn by code.",
                  ["file", "image", "python"], ["draw"], output_modes=["image/png"]),
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
            skill("fan-out", "Fan out",
                  "Sends your text to other hosted agents and combines their results.",
                  ["orchestration", "demo"], ["stressed"])
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
            skill("echo", "Echo", "Repeats text, files and data back to the caller.",
                  ["echo", "oauth2"], ["Hello, securely!"])
        ],
    },
]
# fmt: on


ASSISTANT_SLUG = "assistant"
ASSISTANT_DESCRIPTION = "A model with instructions, using the echo and toolbox agents as tools."
ASSISTANT_SKILL = skill(
    "chat", "Chat", "Answers questions, calling the echo and toolbox agents as tools.",
    ["llm", "chat", "demo"], ["What can you do?", "Reverse the word stressed with your tools."],
)  # fmt: skip
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
        "skills": [ASSISTANT_SKILL],
    }
