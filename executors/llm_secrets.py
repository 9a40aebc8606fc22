"""The `llm` kind's secrets (the model server's API key, each MCP server's bearer token) in
the operators' API: answers show that one is stored, never its sealed value; a secret written
in plain is sealed before it is stored; and the mark an answer showed, written back (a PATCH of
settings read from a GET), keeps the secret already stored."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from a2ahub import sealed

STORED = "(stored)"


def shown_settings(settings: dict[str, Any]) -> dict[str, Any]:
    shown = dict(settings)
    if shown.get("api_key"):
        shown["api_key"] = STORED
    servers = shown.get("mcp_servers")
    if isinstance(servers, list):
        shown["mcp_servers"] = [
            {**server, "token": STORED} if isinstance(server, dict) and server.get("token")
            else server
            for server in servers
        ]  # fmt: skip
    return shown


def written_settings(new: dict[str, Any], stored: dict[str, Any]) -> dict[str, Any]:
    written = with_secret(new, "api_key", stored.get("api_key"), "api_key")
    servers = written.get("mcp_servers")
    if isinstance(servers, list):
        tokens = {
            server.get("url"): server.get("token")
            for server in stored.get("mcp_servers") or []
            if isinstance(server, dict)
        }
        written["mcp_servers"] = [
            with_secret(server, "token", tokens.get(server.get("url")),
                        f"the token of {server.get('url')}")
            if isinstance(server, dict) else server
            for server in servers
        ]  # fmt: skip
    return written


def with_secret(values: dict[str, Any], key: str, kept: Any, what: str) -> dict[str, Any]:
    """`values` with the secret at `key` as it is to be stored: none when empty."""
    values = dict(values)
    if not values.get(key):
        values.pop(key, None)
    else:
        values[key] = written_secret(values[key], kept, what)
    return values


def written_secret(value: Any, kept: Any, what: str) -> Any:
    if value == STORED:
        if not kept:
            raise ValidationError(f"{what}: no secret is stored to keep; write the secret itself.")
        return kept
    if isinstance(value, str) and value and not sealed.is_sealed(value):
        return sealed.seal(value)
    return value
