"""The readable pages of the hub's OpenAPI schemas (the operators' API, the registry): Swagger
UI, its scripts and styles from the hub's own static files (drf-spectacular-sidecar), in the
hub's header. The page and its start-up script are two answers, as the hub's pages run no
inline script (a2ahub.site_security)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.views import SpectacularSwaggerSplitView
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response


class SchemaDocsView(SpectacularSwaggerSplitView):
    """`url_name` names the schema, `title` the page; `as_view(url_name=..., title=...)`."""

    template_name = "hub/api_docs.html"
    permission_classes = [AllowAny]

    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        response = super().get(request, *args, **kwargs)
        if response.data is not None and "title" in response.data:
            response.data["schema_url"] = self._get_schema_url(request)
        return response
