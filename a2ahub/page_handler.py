"""Django's ASGI handlers for the site (pages, admin, registry, operators' API): a page whose
view is synchronous runs its middleware and view on one thread, with one hop in.

Under ASGI, Django runs each of its own middlewares (`MiddlewareMixin`) async, and each then
hops to a thread for its request step and again for its response step: about 30 hops a page,
most of a quick page's time. `PageHandler` builds the chain synchronously, as the test
client builds it, and a request enters it on one thread. An async view (the developer chat, its
try-it box) keeps Django's async chain: it starts work that outlives the view (an inline
agent's turn) and makes sync calls later, which must not be tied to a request thread that
has ended. The A2A doors, the probes and the live pages' sockets do not come through here
(`a2ahub.asgi`).
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import iscoroutinefunction, sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.urls import Resolver404, resolve


class PageHandler(ASGIHandler):
    def __init__(self) -> None:
        super().__init__()
        self.async_pages = ASGIHandler()

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if has_async_view(scope["path"]):
            await self.async_pages(scope, receive, send)
        else:
            await super().__call__(scope, receive, send)

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        return await sync_to_async(self.get_response, thread_sensitive=True)(request)


def has_async_view(path: str) -> bool:
    try:
        return iscoroutinefunction(resolve(path).func)
    except Resolver404:
        return False
