"""The registry's OpenAPI 3 schema at /registry/schema/, generated from its routes' views."""

from __future__ import annotations

from django.urls import include, path
from drf_spectacular.renderers import OpenApiJsonRenderer, OpenApiYamlRenderer
from drf_spectacular.views import SpectacularAPIView
from rest_framework.permissions import AllowAny

from registry import routes


class SchemaView(SpectacularAPIView):
    """JSON unless YAML is asked for (`Accept: application/vnd.oai.openapi`). Public: it says
    what the registry takes, not what it holds."""

    permission_classes = [AllowAny]
    renderer_classes = [OpenApiJsonRenderer, OpenApiYamlRenderer]
    patterns = [path("registry/", include(routes.urlpatterns))]
    custom_settings = {
        "TITLE": "A2A Hub: the agent registry",
        "DESCRIPTION": "Agents register themselves with a credential holding the `registry` "
        "scope, renew and deregister; anyone may search the live registrations.",
        "VERSION": "1.0.0",
    }
