"""The API's resources, routed once for the URL map and for the schema's generator."""

from __future__ import annotations

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from operators_api import views

router = SimpleRouter(trailing_slash=False)
router.register("agents", views.AgentViewSet, basename="api-agent")
router.register("keys", views.ApiKeyViewSet, basename="api-key")
router.register("tasks", views.TaskViewSet, basename="api-task")
router.register("deliveries", views.DeliveryViewSet, basename="api-delivery")
router.register("registrations", views.RegistrationViewSet, basename="api-registration")

# The schema describes these and nothing else (not the registry's or the A2A doors).
SCHEMA_PATTERNS = [path("api/", include(router.urls))]
