"""Create or refresh the demo agents and the operator account; safe to run on every start."""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from a2ahub import sealed
from agents.demo import DEMO_AGENTS, assistant_agent
from agents.models import Agent, Skill


class Command(BaseCommand):
    help = "Create the demo agents and an operator account (its password is printed once)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--operator", default="operator", help="the operator's username")

    def handle(self, *args: Any, **options: Any) -> None:
        with transaction.atomic():
            for spec in DEMO_AGENTS:
                self.seed_agent(dict(spec))
            self.seed_assistant()
        self.seed_operator(options["operator"])

    def seed_agent(self, spec: dict[str, Any]) -> None:
        skills = spec.pop("skills")
        agent, created = Agent.objects.get_or_create(slug=spec["slug"], defaults=spec)
        if created:
            create_skills(agent, skills)
        verb = "created" if created else "kept (already there)"
        self.stdout.write(f"demo agent {agent.slug}: {verb}")

    def seed_assistant(self) -> None:
        """The `llm` demo follows LLM_BASE_URL, LLM_MODEL and LLM_API_KEY at every seed: set
        them and seed again to enable it; its skills are kept once made."""
        spec = assistant_agent(settings.LLM_BASE_URL, settings.LLM_MODEL)
        if settings.LLM_API_KEY:
            spec["executor_settings"]["api_key"] = sealed.seal(settings.LLM_API_KEY)
        skills = spec.pop("skills")
        agent, created = Agent.objects.update_or_create(slug=spec["slug"], defaults=spec)
        if created:
            create_skills(agent, skills)
        if agent.enabled:
            self.stdout.write(f"demo agent assistant: enabled, model {settings.LLM_MODEL}")
        else:
            self.stdout.write(f"demo agent assistant: {spec['description'].split('. ')[-1]}")

    def seed_operator(self, username: str) -> None:
        users = get_user_model()
        if users.objects.filter(username=username).exists():
            self.stdout.write(f"operator account {username!r} exists; its password is unchanged")
            return
        password = secrets.token_urlsafe(12)
        users.objects.create_superuser(username=username, email="", password=password)
        self.stdout.write(
            self.style.SUCCESS(
                f"operator account created: username {username!r}, password {password!r} "
                "(shown only this once; change it in the admin)"
            )
        )


def create_skills(agent: Agent, skills: list[dict[str, Any]]) -> None:
    for position, skill in enumerate(skills):
        Skill.objects.create(agent=agent, position=position, **skill)
