"""Links the console draws to the developer pages, looked up by their URL names when drawn
(the console sits beside the developer pages in the layers: neither imports the other)."""

from __future__ import annotations

from django.urls import reverse


def chat_url(slug: str) -> str:
    """The chat console with an agent (staff may call every agent there but one that takes
    OAuth2 tokens only, which a signed-in session does not carry)."""
    return reverse("developers:chat", kwargs={"slug": slug})


def developer_pages_url() -> str:
    return reverse("developers:agents")
