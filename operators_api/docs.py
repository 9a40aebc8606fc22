"""The API's OpenAPI 3 schema (drf-spectacular, generated from the views and serializers) and
a docs page for staff drawn from it on the server. drf-spectacular's own Swagger UI and Redoc
pages load their scripts from a CDN (or need another package that ships them); the hub sends
no page that loads code from elsewhere, so this page is plain HTML."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer, OpenApiYamlRenderer
from drf_spectacular.views import SpectacularAPIView
from rest_framework.permissions import AllowAny

from operators_api.routes import SCHEMA_PATTERNS

METHODS = ("get", "post", "put", "patch", "delete")


class SchemaView(SpectacularAPIView):
    """The schema, JSON unless YAML is asked for (`Accept: application/vnd.oai.openapi`). It
    is public: it says what the API takes, not what the hub holds."""

    permission_classes = [AllowAny]
    renderer_classes = [OpenApiJsonRenderer, OpenApiYamlRenderer]
    patterns = SCHEMA_PATTERNS


def schema_document() -> dict[str, Any]:
    generator = SchemaGenerator(patterns=SCHEMA_PATTERNS)
    return generator.get_schema(request=None, public=True)  # type: ignore[no-any-return]


def operations(schema: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for path, item in schema.get("paths", {}).items():
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            found.append({
                "method": method.upper(), "path": path,
                "summary": operation.get("summary", ""),
                "description": operation.get("description", ""),
                "tag": (operation.get("tags") or [""])[0],
                "parameters": operation.get("parameters", []),
                "responses": sorted(operation.get("responses", {})),
            })  # fmt: skip
    return found


@staff_member_required
def docs_page(request: HttpRequest) -> HttpResponse:
    schema = schema_document()
    context = {
        "info": schema.get("info", {}),
        "operations": operations(schema),
        "components": json.dumps(schema.get("components", {}).get("schemas", {}), indent=2),
    }
    return render(request, "operators_api/docs.html", context)
