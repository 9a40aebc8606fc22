"""The signed-in user's OAuth2 applications: the list, a new one (its secret shown once, on the
answer to the form), and deleting one after a confirmation.

Applications are django-oauth-toolkit's own rows, with the user as their owner; operators see
and manage every application in the admin.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from oauth2_provider.models import Application

from agents.views import public_base_url
from developers.forms import ApplicationForm


@never_cache
@login_required
def application_list(request: HttpRequest) -> HttpResponse:
    form = ApplicationForm(request.POST if request.method == "POST" else None)
    created, secret = None, ""
    if form.is_bound and form.is_valid():
        created = form.save(commit=False)
        created.user = request.user
        # DOT made the secret with the instance and keeps only its hash once saved: this
        # answer is the one time anyone sees it.
        secret = created.client_secret
        created.save()
        form = ApplicationForm()
    context = {
        "applications": own_applications(request),
        "form": form,
        "created": created,
        "secret": secret,
        "token_url": f"{public_base_url(request)}/o/token/",
    }
    status = 400 if form.errors else 200
    return render(request, "developers/applications.html", context, status=status)


@login_required
def application_delete(request: HttpRequest, pk: int) -> HttpResponse:
    application = get_object_or_404(own_applications(request), pk=pk)
    if request.method == "POST":
        # Its tokens go with it (DOT's foreign keys cascade), and so do the agents' lists.
        application.delete()
        messages.success(request, f"Application {application.name} is deleted.")
        return redirect("developers:applications")
    listed_on = application.callable_agents.count()
    context = {"application": application, "listed_on": listed_on}
    return render(request, "developers/application_delete.html", context)


def own_applications(request: HttpRequest) -> QuerySet[Application]:
    return Application.objects.filter(user=request.user).order_by("-created", "-pk")  # type: ignore[misc]
