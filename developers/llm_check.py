"""The `llm` settings form's "Check the server" button: the hub asks the model server for its
models (GET <base_url>/models, through the outbound guard) and says what it found or why it
failed, and whether it lists the model typed. A blank key on an agent's edit page checks with
the key stored for that agent (the developer's own agents only; operators any)."""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_POST

from agents.models import Agent
from executors import llm

MOST_LISTED = 20


def stored_settings(request: HttpRequest, slug: str) -> dict[str, Any]:
    if not slug:
        return {}
    agents = Agent.objects.filter(slug=slug, executor_kind="llm")
    if not request.user.is_staff:
        agents = agents.filter(owner=request.user.pk)
    agent = agents.first()
    return dict(agent.executor_settings or {}) if agent is not None else {}


def found(models: list[str]) -> str:
    if not models:
        return "The server answers, and lists no models."
    shown = ", ".join(models[:MOST_LISTED])
    more = f" and {len(models) - MOST_LISTED} more" if len(models) > MOST_LISTED else ""
    return f"The server answers: {len(models)} model(s): {shown}{more}."


@login_required
@require_POST
def llm_check(request: HttpRequest) -> JsonResponse:
    raw: dict[str, Any] = {"base_url": request.POST.get("base_url", "").strip(), "model": "-"}
    stored = stored_settings(request, request.POST.get("agent", "").strip())
    typed_key = request.POST.get("api_key", "").strip()
    env = request.POST.get("api_key_env", "").strip()
    if env:
        raw["api_key_env"] = env
    elif not typed_key and stored.get("api_key"):
        raw["api_key"] = stored["api_key"]
    try:
        config = llm.read_settings(raw)
        if typed_key:
            config.api_key = typed_key
        models = async_to_sync(llm.list_models)(config)
    except llm.ModelFailure as exc:
        return JsonResponse({"ok": False, "text": exc.message, "models": []})
    text, model = found(models), request.POST.get("model", "").strip()
    missing = bool(model and models and model not in models)
    if missing:
        text += f" It does not list {model}, the model typed here."
    return JsonResponse({"ok": True, "text": text, "models": models[:200], "warning": missing})
