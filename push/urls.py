"""URLs of the push app."""

from __future__ import annotations

from django.urls import path

from push import views

urlpatterns = [
    path("inbox/<str:token>/", views.inbox, name="push-inbox"),
]
