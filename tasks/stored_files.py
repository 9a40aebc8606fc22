"""How the hub serves the bytes of a stored file part (a message's or an artifact's), on its
own origin: the admin's downloads and the chat console's files.

Anyone who may send a message chooses those bytes and their media type, so the type is never
believed: a file goes out as `application/octet-stream`, as an attachment, with
`X-Content-Type-Options: nosniff`, which a browser will neither render nor run (a `<script>`
naming it is refused under nosniff). The one exception is an image whose bytes are a PNG,
JPEG, GIF or WebP image (checked by their signature, whatever the part says): it is served
inline as that type, for `<img>` to show. SVG is no such image: it can carry script. Every
answer also carries a sandboxing Content-Security-Policy, for a browser that opens it anyway.
"""

from __future__ import annotations

from urllib.parse import quote

from django.http import HttpResponse

OPAQUE = "application/octet-stream"
SANDBOX = "default-src 'none'; sandbox"
# The types a page may show inline (as an <img>); the bytes must prove them when served.
SHOWN_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def image_type(data: bytes) -> str | None:
    """The image type the bytes' signature proves: PNG, JPEG, GIF or WebP, else None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def file_response(data: bytes, filename: str) -> HttpResponse:
    """The stored bytes as the browser may safely receive them (see the module's notes);
    `filename` is already a plain name."""
    proven = image_type(data)
    response = HttpResponse(data, content_type=proven or OPAQUE)
    kind = "inline" if proven else "attachment"
    response["Content-Disposition"] = f"{kind}; filename*=UTF-8''{quote(filename, safe='')}"
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = SANDBOX
    return response
