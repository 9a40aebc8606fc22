"""The shared endpoints, under /a2a/: every hosted agent behind one URL per binding, the agent
named by the 1.0 `tenant` (in the params for JSON-RPC, in the path for HTTP+JSON)."""

from __future__ import annotations

from django.urls import path, re_path

from protocol import jsonrpc, rest

urlpatterns = [
    path("jsonrpc/", jsonrpc.shared_endpoint, name="shared-jsonrpc"),
    path("jsonrpc", jsonrpc.shared_endpoint),
    path("rest/", rest.shared_endpoint, {"tenant": ""}, name="shared-rest"),
    path("rest/<str:tenant>", rest.shared_endpoint),
    path("rest/<str:tenant>/", rest.shared_endpoint),
    re_path(r"^rest/(?P<tenant>[^/]+)/(?P<tail>(?s:.+))$", rest.shared_endpoint),
]
