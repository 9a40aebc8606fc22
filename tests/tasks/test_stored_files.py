"""How stored file parts are served on the hub's origin (the admin's downloads and the chat
console's files): plain bytes to download whatever type the sender named, images inline only
when their bytes are one (PNG, JPEG, GIF, WebP; never SVG)."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb
from django.test import Client
from django.urls import reverse

from executors.demo_skills import draw_png
from tasks.models import Message
from tasks.stored_files import file_response, image_type
from tests.factories.messages import user_message
from tests.factories.tasks import open_task

SCRIPT = b"document.title = 'ran'; window.ran = true;"
SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
GIF = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00"
WEBP = b"RIFF\x1a\x00\x00\x00WEBPVP8 "


@pytest.mark.parametrize(
    ("data", "kind"),
    [(draw_png(), "image/png"), (JPEG, "image/jpeg"), (GIF, "image/gif"), (WEBP, "image/webp")],
)
def test_the_four_image_types_are_known_by_their_bytes(data: bytes, kind: str) -> None:
    response = file_response(data, "picture")

    assert image_type(data) == kind
    assert response["Content-Type"] == kind
    assert response["Content-Disposition"] == "inline; filename*=UTF-8''picture"
    assert response["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize("data", [SCRIPT, SVG, b"<html><script>1</script>", b"", b"RIFF1234AVI "])
def test_anything_else_is_opaque_bytes_to_download(data: bytes) -> None:
    response = file_response(data, "evil.js")

    assert image_type(data) is None
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"] == "attachment; filename*=UTF-8''evil.js"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Security-Policy"] == "default-src 'none'; sandbox"


def stored_file(agent: Any, data: bytes, media_type: str, name: str) -> str:
    """The admin's URL of a file part sent to `agent` in a user's message."""
    upload = pb.Part(raw=data, media_type=media_type, filename=name)
    task = open_task(agent, message=user_message(parts=[upload], message_id="upload"))
    row = Message.objects.get(task=task)
    return reverse("admin:tasks_task_file", args=[task.id, "message", row.pk, 0])


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("data", "declared"),
    [(SCRIPT, "text/javascript"), (SVG, "image/svg+xml"), (SCRIPT, "image/png"),
     (b"<p>hi</p>", "text/html")],
)  # fmt: skip
def test_the_admin_serves_a_stored_file_as_bytes_whatever_type_it_names(
    operator_client: Client, agent_factory: Any, data: bytes, declared: str
) -> None:
    response = operator_client.get(stored_file(agent_factory("files"), data, declared, "f"))

    assert response.content == data
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith("attachment;")
    assert response["X-Content-Type-Options"] == "nosniff"


@pytest.mark.django_db
def test_the_admin_shows_a_real_png_inline(operator_client: Client, agent_factory: Any) -> None:
    url = stored_file(agent_factory("files"), draw_png(), "image/png", "tiles.png")

    response = operator_client.get(url)

    assert response["Content-Type"] == "image/png"
    assert response["Content-Disposition"] == "inline; filename*=UTF-8''tiles.png"
