"""Links the console draws to pages other apps own, looked up when drawn: an app that adds
a page later is linked by its URL name, with no change here."""

from __future__ import annotations

from django.urls import NoReverseMatch, reverse


def chat_url(slug: str) -> str:
    """The developer pages' chat with an agent: by its URL name when the page exists, else
    the path it is to have, beside the agent's own developer page."""
    for args, kwargs in (((), {"slug": slug}), ((slug,), {})):
        try:
            return reverse("developers:chat", args=args, kwargs=kwargs)
        except NoReverseMatch:
            pass
    try:
        return reverse("developers:agent", kwargs={"slug": slug}) + "chat/"
    except NoReverseMatch:
        return f"/developers/agents/{slug}/chat/"


def developer_pages_url() -> str:
    try:
        return reverse("developers:agents")
    except NoReverseMatch:
        return "/dev/agents/"
