"""The demo seed: idempotent, and the operator's password is shown exactly once."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from django.core.management import call_command

from agents.models import Agent

pytestmark = pytest.mark.django_db


def seed() -> str:
    out = StringIO()
    call_command("seed_demo", stdout=out)
    return out.getvalue()


def test_seeding_twice_creates_each_demo_agent_once() -> None:
    seed()
    seed()
    assert Agent.objects.filter(slug="echo").count() == 1
    assert Agent.objects.get(slug="echo").skills.count() == 1


def test_the_operator_password_is_printed_once_and_works() -> None:
    first = seed()
    password = re.search(r"password '([^']+)'", first)
    assert password is not None
    assert authenticate(username="operator", password=password.group(1)) is not None
    assert User.objects.get(username="operator").is_staff
    second = seed()
    assert password.group(1) not in second
    assert "unchanged" in second


def test_seeding_keeps_an_operators_edits() -> None:
    seed()
    Agent.objects.filter(slug="echo").update(description="Tuned by the operator.")
    seed()
    assert Agent.objects.get(slug="echo").description == "Tuned by the operator."
