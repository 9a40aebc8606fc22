"""What the live pages show, rendered as their first load renders it, so a refresh over the
WebSocket swaps in exactly the HTML a reload would give."""

from __future__ import annotations

from typing import Any

from django.template.loader import render_to_string

from console import dashboard

DASHBOARD_SOCKET = "/ws/console/dashboard/"


def dashboard_context() -> dict[str, Any]:
    return {"board": dashboard.gather(), "socket": DASHBOARD_SOCKET}


def dashboard_panels() -> str:
    """The dashboard's numbers as HTML (what replaces them on a live page)."""
    return render_to_string("console/dashboard_panels.html", {"board": dashboard.gather()})
