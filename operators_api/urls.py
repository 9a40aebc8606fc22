"""The operators' API under /api/: its resources, its OpenAPI schema and the schema's docs."""

from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.urls import include, path

from a2ahub.api_docs import SchemaDocsView
from operators_api import docs
from operators_api.routes import router

# The docs page is for staff, as the API is; the schema it reads is public.
docs_page = staff_member_required(
    SchemaDocsView.as_view(url_name="api-schema", title="The operators' API")
)

urlpatterns = [
    path("schema/", docs.SchemaView.as_view(), name="api-schema"),
    path("docs/", docs_page, name="api-docs"),
    path("", include(router.urls)),
]
