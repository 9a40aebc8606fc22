"""The A2A endpoints of one hosted agent, under /agents/<slug>/."""

from __future__ import annotations

from django.urls import path, re_path

from protocol import jsonrpc, rest

urlpatterns = [
    # Both spellings: a POST must never meet an APPEND_SLASH redirect.
    path("<str:slug>/jsonrpc/", jsonrpc.endpoint, name="agent-jsonrpc"),
    path("<str:slug>/jsonrpc", jsonrpc.endpoint),
    path("<str:slug>/rest/", rest.endpoint, name="agent-rest"),
    # Any tail, line breaks included: a path the binding does not know gets its JSON 404.
    re_path(r"^(?P<slug>[^/]+)/rest/(?P<tail>(?s:.+))$", rest.endpoint),
]
