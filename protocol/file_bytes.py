"""A file's bytes as JSON carries them, base64 text, read strictly before anything decodes it.

protobuf's JSON parser and the SDK's 0.3 conversion decode base64 leniently: a character
outside the alphabet is dropped, so `"!!!!"` became an empty file and the task stored none of
what was sent; 0.3 text with bad padding raised inside the conversion (-32603, HTTP 500).
Here text that is not base64 is refused with -32602 naming the part. A 1.0 `raw` may be
standard or URL-safe base64, padded or not, as proto3's JSON mapping allows; a 0.3
`file.bytes` is standard base64 with its padding, the only form the SDK's conversion decodes
as written.
"""

from __future__ import annotations

import binascii
from typing import Any

from a2ahub.errors import invalid_params

URL_SAFE = str.maketrans("-_", "+/")
# The members of a 1.0 Part that are its content besides `raw` (a oneof): a part naming two
# is left whole for protobuf to refuse.
OTHER_CONTENT = ("text", "url", "data")
NOT_BASE64 = "is not base64"


def decoded(text: str, url_safe: bool = True, padded: bool = False) -> bytes | None:
    """The bytes `text` spells in base64, or None when it spells none. Line breaks and spaces
    (base64 wrapped as MIME wraps it) are read past, as the lenient decoders did."""
    found = strictly(text, url_safe, padded)
    if found is None and any(space in text for space in " \t\r\n"):
        found = strictly("".join(text.split()), url_safe, padded)
    return found


def strictly(text: str, url_safe: bool, padded: bool) -> bytes | None:
    if url_safe and ("-" in text or "_" in text):
        text = text.translate(URL_SAFE)
    missing = -len(text) % 4
    if missing and (padded or missing == 3):
        return None
    try:
        return binascii.a2b_base64(text + "=" * missing, strict_mode=True)
    except (binascii.Error, ValueError):  # ValueError: text that is not ASCII
        return None


def taken_from(params: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[int, bytes]]]:
    """A 1.0 SendMessage's params without the `raw` text of its message's parts, and each of
    those parts' index and bytes, decoded once here (protobuf would decode them again)."""
    message = params.get("message")
    parts = message.get("parts") if isinstance(message, dict) else None
    if not isinstance(parts, list):
        return params, []
    taken: list[tuple[int, bytes]] = []
    kept: list[Any] = []
    for index, part in enumerate(parts):
        raw = part.get("raw") if isinstance(part, dict) else None
        if isinstance(raw, str):
            data = decoded(raw)
            if data is None:
                raise invalid_params(f"message.parts[{index}].raw", NOT_BASE64)
            if not any(key in part for key in OTHER_CONTENT):
                taken.append((index, data))
                part = {key: value for key, value in part.items() if key != "raw"}
        kept.append(part)
    if not taken:
        return params, []
    assert isinstance(message, dict)
    return {**params, "message": {**message, "parts": kept}}, taken


def check_v03_parts(parts: list[Any]) -> None:
    """Refuse a 0.3 message whose file part's `bytes` is not standard, padded base64."""
    for index, part in enumerate(parts):
        file = getattr(part.root, "file", None)
        text = getattr(file, "bytes", None)
        if isinstance(text, str) and decoded(text, url_safe=False, padded=True) is None:
            raise invalid_params(f"message.parts.{index}.file.bytes", NOT_BASE64)
