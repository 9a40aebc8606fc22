"""The page where an agent's owner (or staff) says who may call it: anyone, any signed-in
principal, or the users, groups and applications listed, and whether it takes only OAuth2
tokens; and who called it lately, with which credential, and who changed the rule (the audit
log). The A2A doors apply the rule at once in this process (the agent cache is cleared when
the change commits) and in the others within AGENT_CACHE_SECONDS.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from agents import audit
from agents.lookup import forget_agents
from agents.models import AccessVia, Agent
from developers.forms import AgentAccessForm


def manageable_agent(request: HttpRequest, slug: str) -> Agent:
    """The agent if the user owns it or is staff; a 404 otherwise, as on the other pages."""
    agents = Agent.objects.all()
    if not getattr(request.user, "is_staff", False):
        agents = agents.filter(owner_id=request.user.pk)
    return get_object_or_404(agents, slug=slug)


# How many of the latest credential uses and access changes the page shows (the admin has all).
RECENT = 20


@login_required
def agent_access(request: HttpRequest, slug: str) -> HttpResponse:
    agent = manageable_agent(request, slug)
    data = request.POST if request.method == "POST" else None
    form = AgentAccessForm(data, instance=manageable_agent(request, slug), user=request.user)
    if form.is_bound and form.is_valid():
        before = audit.snapshot(agent)
        with transaction.atomic():
            form.save()
            after = audit.snapshot(form.instance)
            via = AccessVia.DEVELOPER_PAGES
            audit.record_access_change(agent, request.user, via, before, after)
            # Saving the row cleared the cache, but the lists are written after it: a request
            # in between may have cached the agent as it was until this commits.
            transaction.on_commit(forget_agents)
        messages.success(request, f"Who may call {agent.slug} is saved.")
        return redirect("developers:agent-access", slug=agent.slug)
    context = {
        "agent": agent, "form": form, "owner": agent.owner_id == request.user.pk,
        "uses": audit.entries_for(agent).select_related("user", "application")[:RECENT],
        "changes": audit.changes_for(agent)[:RECENT],
    }  # fmt: skip
    return render(request, "developers/access.html", context, status=400 if form.errors else 200)
