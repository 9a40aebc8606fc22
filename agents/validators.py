"""Validators for the JSON fields of agents and skills, so bad shapes fail as field errors."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from a2ahub import outbound


def validate_string_list(value: Any) -> None:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValidationError("Enter a JSON list of non-empty strings.")


def validate_nonempty_string_list(value: Any) -> None:
    validate_string_list(value)
    if not value:
        raise ValidationError("Enter at least one value.")


def validate_security_requirements(value: Any) -> None:
    ok = isinstance(value, list) and all(
        isinstance(req, dict)
        and all(isinstance(k, str) and isinstance(v, list) for k, v in req.items())
        and all(isinstance(s, str) for scopes in req.values() for s in scopes)
        for req in value
    )
    if not ok:
        raise ValidationError('Enter a JSON list like [{"apiKey": []}].')


def validate_security_schemes(value: Any) -> None:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and k and isinstance(v, dict) for k, v in value.items()
    ):
        raise ValidationError('Enter a JSON object like {"apiKey": {"type": "apiKey", ...}}.')


def validate_extensions(value: Any) -> None:
    if not isinstance(value, list):
        raise ValidationError("Enter a JSON list of extension objects.")
    for ext in value:
        if not isinstance(ext, dict) or not isinstance(ext.get("uri"), str) or not ext["uri"]:
            raise ValidationError('Each extension needs a "uri" string.')
        if "params" in ext and not isinstance(ext["params"], dict):
            raise ValidationError('An extension\'s "params" must be a JSON object.')
        if "required" in ext and not isinstance(ext["required"], bool):
            raise ValidationError('An extension\'s "required" must be true or false.')


def validate_security_requirements_reference(
    requirements: list[dict[str, list[str]]], schemes: dict[str, Any]
) -> None:
    unknown = sorted({name for req in requirements for name in req} - set(schemes))
    if unknown:
        raise ValidationError(f"Not a declared security scheme: {', '.join(unknown)}.")


def validate_callable_url(url: str, refusal: str) -> None:
    """A URL in an agent's executor settings passes the outbound guard when the agent is
    saved, not only when it is called (its name may not resolve yet); the error starts with
    `refusal` and says why."""
    try:
        outbound.check_url(url, allow_unresolved=True)
    except outbound.UnsafeURL as exc:
        raise ValidationError(f"{refusal}: {exc}") from exc
