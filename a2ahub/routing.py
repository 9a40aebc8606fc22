"""The hub's WebSocket routes (Channels consumers), mounted by `a2ahub.asgi`.

Apps with live pages hand their consumers' paths to the composition root (`a2ahub.asgi`),
which passes them here; any other path is refused at the handshake (HTTP 403), quietly,
rather than raising inside the server.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from channels.generic.websocket import AsyncWebsocketConsumer
from django.urls import re_path


class RefusedSocket(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        await self.close()


def routes(*apps: Iterable[Any]) -> list[Any]:
    """Every app's WebSocket paths, then the refusal of any other path."""
    return [*(route for app in apps for route in app), re_path(r"", RefusedSocket.as_asgi())]
