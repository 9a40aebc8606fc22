"""The hub's WebSocket routes (Channels consumers), mounted by `a2ahub.asgi`.

Apps with live pages add their consumers' paths to `websocket_urlpatterns`; any other path is
refused at the handshake (HTTP 403), quietly, rather than raising inside the server.
"""

from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncWebsocketConsumer
from django.urls import re_path

websocket_urlpatterns: list[Any] = []


class RefusedSocket(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        await self.close()


def routes() -> list[Any]:
    return [*websocket_urlpatterns, re_path(r"", RefusedSocket.as_asgi())]
