"""The developer pages: the home page, an owner's agents, their forms, keys, tasks and "try it".

Every page that changes an agent looks it up with the signed-in user as owner, so another
user's agent is a 404, never a 403 that would confirm it exists. An agent the user may call but
not own has a read-only page (its URLs, snippets and the user's own tasks on it), as its chat.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError, transaction
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from agents import cards
from agents.lookup import find_agent
from agents.models import Agent, ApiKey
from agents.views import public_base_url
from developers import snippets
from developers.access import may_call
from developers.callers import name_callers
from developers.forms import (
    ApiKeyForm,
    DeveloperAgentForm,
    DeveloperSkillFormSet,
    ImportCardForm,
    bind_agent_forms,
    kept_skills,
)
from developers.task_pages import callable_agent, sees_every_task, visible_tasks
from developers.tryit import send_as_owner
from executors import remote_cards as importing
from tasks.admin_lists import CappedPaginator, capped_count
from tasks.models import Task

if TYPE_CHECKING:
    from developers.forms import SkillForms

TASKS_PER_PAGE = 25
MAX_TRY_TEXT = 4000


def owned_agent(request: HttpRequest, slug: str) -> Agent:
    return get_object_or_404(Agent, slug=slug, owner=request.user)  # type: ignore[misc]


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    agents = list(
        Agent.objects.filter(public=True, enabled=True).annotate(skill_count=Count("skills"))
    )
    for agent in agents:
        # Links only to what the user may use: the chat and the agent's page answer 404 else.
        agent.callable = may_call(request.user, agent)  # type: ignore[attr-defined]
        agent.shown = agent.callable or sees_every_task(request.user, agent)  # type: ignore[attr-defined]
    return render(request, "developers/home.html", {"agents": agents})


@login_required
@require_GET
def agent_list(request: HttpRequest) -> HttpResponse:
    agents = list(
        Agent.objects.filter(owner=request.user).annotate(skill_count=Count("skills"))  # type: ignore[misc]
    )
    for agent in agents:
        # Counted no further than the cap, one agent at a time: counting every task of every
        # agent in one join read the whole table of an agent with a million tasks.
        # (As text: a template would print "10,000+" as the number it stands for.)
        agent.task_count = str(capped_count(Task.objects.filter(agent=agent)))  # type: ignore[attr-defined]
    return render(request, "developers/agent_list.html", {"agents": agents})


# -- registering and editing -------------------------------------------------------------


@login_required
def agent_create(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form, formset, valid = bind_agent_forms(request.POST, None)
        if valid:
            agent = save_agent(form, formset, request)
            messages.success(request, f"Agent {agent.slug} is registered.")
            return redirect("developers:agent", slug=agent.slug)
    else:
        form = DeveloperAgentForm()
        formset = DeveloperSkillFormSet(instance=Agent(), prefix="skills")
    return render_form(request, form, formset, None)


@login_required
def agent_edit(request: HttpRequest, slug: str) -> HttpResponse:
    agent = owned_agent(request, slug)
    if request.method == "POST":
        # The forms fill in the instance they are given; `agent` stays as stored for the page.
        form, formset, valid = bind_agent_forms(request.POST, owned_agent(request, slug))
        if valid:
            saved = save_agent(form, formset, request)
            messages.success(request, f"Agent {saved.slug} is saved.")
            return redirect("developers:agent", slug=saved.slug)
    else:
        form = DeveloperAgentForm(instance=agent)
        formset = DeveloperSkillFormSet(instance=agent, prefix="skills")
        formset.extra = 0
    return render_form(request, form, formset, agent)


def render_form(
    request: HttpRequest, form: DeveloperAgentForm, formset: SkillForms, agent: Agent | None
) -> HttpResponse:
    if agent is None:
        preview_url = reverse("developers:preview-new")
    else:
        preview_url = reverse("developers:preview", kwargs={"slug": agent.slug})
    context = {"form": form, "formset": formset, "agent": agent, "preview_url": preview_url}
    status = 400 if form.is_bound else 200
    return render(request, "developers/agent_form.html", context, status=status)


def save_agent(form: DeveloperAgentForm, formset: SkillForms, request: HttpRequest) -> Agent:
    kept_skills(formset)
    with transaction.atomic():
        agent = form.save(commit=False)
        if agent.owner_id is None:
            agent.owner = request.user  # type: ignore[assignment]
        agent.save()
        formset.instance = agent
        formset.save()
    return agent


# -- importing from a remote card -----------------------------------------------------------


@login_required
def agent_import(request: HttpRequest) -> HttpResponse:
    form = ImportCardForm(request.POST or None)
    # The page's hints are markup: the form's `/agents/<slug>/` would lose its `<slug>`.
    base = public_base_url(request)
    form.fields["slug"].help_text = escape(
        f"The hub agent's address: {base}/agents/<slug>/, e.g. {base}/agents/weather/."
    )
    if request.method == "POST" and form.is_valid():
        url, slug = form.cleaned_data["card_url"], form.cleaned_data["slug"]
        try:
            agent = importing.import_agent(url, slug, request.user)
        except importing.CardRejected as exc:
            form.add_error("card_url", str(exc))
        except IntegrityError:  # another import took the slug since the form checked it
            form.add_error("slug", "An agent with this slug already exists.")
        else:
            messages.success(request, f"Agent {agent.slug} is imported from {url}.")
            return redirect("developers:agent", slug=agent.slug)
    status = 400 if form.is_bound else 200
    return render(request, "developers/import_form.html", {"form": form}, status=status)


@login_required
@require_POST
def agent_resync(request: HttpRequest, slug: str) -> HttpResponse:
    agent = owned_agent(request, slug)
    try:
        importing.resync_agent(agent)
    except importing.CardRejected as exc:
        messages.error(request, f"Nothing was changed: {exc}")
    else:
        messages.success(request, f"Agent {agent.slug} is re-synced from its remote card.")
    return redirect("developers:agent", slug=agent.slug)


# -- the live preview ----------------------------------------------------------------------


@login_required
@require_POST
def preview_new(request: HttpRequest) -> JsonResponse:
    return preview(request, None)


@login_required
@require_POST
def preview_existing(request: HttpRequest, slug: str) -> JsonResponse:
    return preview(request, owned_agent(request, slug))


def preview(request: HttpRequest, agent: Agent | None) -> JsonResponse:
    """The union card the form would publish, or every error the form would show; nothing is
    saved (the forms only fill in unsaved instances)."""
    form, formset, valid = bind_agent_forms(request.POST, agent, preview=True)
    if not valid:
        return JsonResponse({"ok": False, "errors": form_errors(form, formset)})
    card = cards.build_card(form.instance, public_base_url(request), skills=kept_skills(formset))
    document = cards.card_document(card, cards.UNION)
    return JsonResponse({"ok": True, "card": document}, json_dumps_params={"ensure_ascii": False})


def form_errors(form: DeveloperAgentForm, formset: SkillForms) -> list[str]:
    """Flat, readable messages: the page lists them next to the preview."""
    problems = [f"{label_of(form, field)}: {m}" for field, ms in form.errors.items() for m in ms]
    for number, skill in enumerate(formset.forms, start=1):
        problems += [
            f"Skill {number}, {label_of(skill, field).lower()}: {m}"
            for field, ms in skill.errors.items()
            for m in ms
        ]
    problems += [f"Skills: {message}" for message in formset.non_form_errors()]
    return problems


def label_of(form: Any, field: str) -> str:
    """The name the page shows a field under (a field without a label of its own: from its
    name, as Django's templates print it, not "None")."""
    if field == "__all__":
        return "Card"
    return str(form[field].label) if field in form.fields else field


# -- one agent ---------------------------------------------------------------------------


@login_required
@require_GET
def agent_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """The owner's page of the agent, or a read-only one for a user who may call it."""
    agent = callable_agent(request.user, slug)
    base = public_base_url(request)
    recent = list(visible_tasks(request.user, agent).order_by("-created_at", "-id")[:5])
    name_callers(recent)
    context = {
        "agent": agent,
        "readonly": agent.owner_id != request.user.pk,
        "sees_all": sees_every_task(request.user, agent),
        "can_call": may_call(request.user, agent),
        "card_text": cards.card_text(agent, base),
        "card_url": cards.card_url(base, agent),
        "jsonrpc_url": cards.jsonrpc_url(base, agent),
        "rest_url": cards.rest_url(base, agent),
        "snippets": snippets.snippets(agent, base),
        "credential": snippets.credential_of(agent),
        "recent_tasks": [with_status_text(t) for t in recent],
        "active_keys": agent.api_keys.filter(revoked_at__isnull=True).count(),
        "remote": importing.sync_state(agent) if importing.is_remote(agent) else None,
    }
    return render(request, "developers/agent_detail.html", context)


@login_required
@require_POST
async def try_message(request: HttpRequest, slug: str) -> JsonResponse:
    user = await request.auser()
    owned = await Agent.objects.filter(slug=slug, owner=user).aexists()  # type: ignore[misc]
    if not owned:
        raise Http404("No such agent.")
    text = request.POST.get("text", "").strip()
    if not text or len(text) > MAX_TRY_TEXT:
        return try_refused(f"Type a message to send (at most {MAX_TRY_TEXT} characters).")
    # The endpoint's own lookup: only an enabled agent answers, with its skills loaded.
    agent = await sync_to_async(find_agent)(slug)
    if agent is None:
        return try_refused("This agent is disabled; an operator can enable it.")
    return JsonResponse(await send_as_owner(request, agent, text))


def try_refused(message: str) -> JsonResponse:
    return JsonResponse({"ok": False, "error": {"message": message}})


# -- keys ----------------------------------------------------------------------------------


@never_cache
@login_required
def key_list(request: HttpRequest, slug: str) -> HttpResponse:
    agent = owned_agent(request, slug)
    shown = f"new-key:{agent.pk}"
    form = ApiKeyForm(request.POST or None)
    if request.method == "POST" and not agent.oauth2 and form.is_valid():
        # Only the hash is kept. The secret waits in the session for the page the browser is
        # sent to, and is shown there once: reloading that page makes no second key.
        _, secret = ApiKey.issue(form.cleaned_data["name"], request.user, agent)
        request.session[shown] = secret
        return redirect("developers:keys", slug=agent.slug)
    secret = request.session.pop(shown, "")
    keys = agent.api_keys.select_related("owner")
    context = {"agent": agent, "keys": keys, "form": form, "secret": secret}
    if secret:
        context["snippets"] = snippets.snippets(agent, public_base_url(request), key=secret)
    return render(request, "developers/keys.html", context)


@login_required
@require_POST
def key_revoke(request: HttpRequest, slug: str, key_id: int) -> HttpResponse:
    agent = owned_agent(request, slug)
    key = get_object_or_404(ApiKey, pk=key_id, agent=agent)
    revoked = ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    if revoked:
        messages.success(request, f"Key {key.name} ({key.prefix}…) is revoked.")
    return redirect("developers:keys", slug=agent.slug)


# -- tasks ---------------------------------------------------------------------------------


@login_required
@require_GET
def task_list(request: HttpRequest, slug: str) -> HttpResponse:
    """Every caller's tasks for the owner (and staff); a caller's own for anyone else."""
    agent = callable_agent(request.user, slug)
    tasks = visible_tasks(request.user, agent).order_by("-created_at", "-id")
    # One task (the chat console links its task here): an id that is none is no task.
    only = request.GET.get("task", "")
    if only:
        tasks = tasks.filter(id=only) if is_uuid(only) else tasks.none()
    # The count stops at a cap ("10,000+"): filters narrow a longer list, as in the admin.
    page = CappedPaginator(tasks, TASKS_PER_PAGE).get_page(request.GET.get("page"))
    page.object_list = [with_status_text(task) for task in page.object_list]
    name_callers(page.object_list)
    context = {
        "agent": agent,
        "readonly": agent.owner_id != request.user.pk,
        "sees_all": sees_every_task(request.user, agent),
        "page": page,
        "only": only,
        "count": str(page.paginator.count),
    }
    return render(request, "developers/tasks.html", context)


def is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def with_status_text(task: Task) -> Task:
    """Adds `status_text`: the text parts of the task's last status message."""
    message: dict[str, Any] = task.status_message or {}
    parts = message.get("parts") or []
    texts = [str(p["text"]) for p in parts if isinstance(p, dict) and "text" in p]
    task.status_text = "\n".join(texts)  # type: ignore[attr-defined]
    return task
