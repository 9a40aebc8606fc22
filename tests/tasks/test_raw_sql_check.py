"""The system check that the task models still fit the raw SQL of `tasks.sql`: the models as
they are pass, and a field the raw statements would write wrong fails start-up, named. Names
themselves (a `db_column`, a `db_table`) are fine: the statements take them from `_meta`."""

# The throwaway models here are never shown: they need no __str__.
# ruff: noqa: DJ008

from __future__ import annotations

from collections.abc import Sequence

import pytest
from django.core.checks import CheckMessage, Error
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models import Value
from django.test.utils import isolate_apps

from tasks import checks, columns, sql
from tasks.models import Message, Task


def found(errors: Sequence[CheckMessage]) -> list[tuple[str | None, str]]:
    """Each error's id and what it names, as `manage.py check` prints it."""
    assert all(isinstance(e, Error) for e in errors)
    return [(e.id, str(e).split(": ", 1)[0]) for e in errors]


def test_the_task_models_fit_the_raw_sql() -> None:
    assert checks.raw_sql_fits_models() == []
    call_command("check", "tasks")  # raises SystemCheckError on any Error


def test_an_automatic_timestamp_fails_start_up_naming_the_field(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(Task._meta.get_field("updated_at"), "auto_now", True)

    with pytest.raises(SystemCheckError, match=r"tasks\.Task\.updated_at: \(tasks\.E002\)"):
        call_command("check", "tasks")


def test_a_database_default_without_the_models_own_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(Message._meta.get_field("message_id"), "db_default", Value("m"))

    assert found(checks.raw_sql_fits_models()) == [("tasks.E001", "tasks.Message.message_id")]


def test_a_database_default_beside_the_models_own_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    # The raw INSERT writes the model's default; the database's serves older releases' INSERTs.
    monkeypatch.setattr(Message._meta.get_field("position"), "db_default", Value(0))

    assert checks.raw_sql_fits_models() == []


def test_json_with_an_encoder_of_its_own_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(Task._meta.get_field("metadata"), "encoder", DjangoJSONEncoder)

    assert found(checks.raw_sql_fits_models()) == [("tasks.E003", "tasks.Task.metadata")]


@isolate_apps("tasks")
def test_a_field_class_of_its_own_is_refused_by_name() -> None:
    class Shouting(models.CharField):
        def get_prep_value(self, value: object) -> object:
            return str(value).upper()

    class Note(models.Model):
        text = Shouting(max_length=10)
        created_at = models.DateTimeField(auto_now_add=True)

        class Meta:
            app_label = "tasks"

    assert found(checks.model_problems(Note)) == [
        ("tasks.E003", "tasks.Note.text"),
        ("tasks.E002", "tasks.Note.created_at"),
    ]


@isolate_apps("tasks")
def test_a_model_whose_rows_span_two_tables_is_refused() -> None:
    class Base(models.Model):
        class Meta:
            app_label = "tasks"

    class Child(Base):
        text = models.CharField(max_length=10)

        class Meta:
            app_label = "tasks"

    assert found(checks.model_problems(Child)) == [("tasks.E004", "tasks.Child")]


def test_a_not_null_column_the_insert_leaves_out_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    every = sql.inserted_fields
    monkeypatch.setattr(
        sql, "inserted_fields", lambda model: [f for f in every(model) if f.name != "owner"]
    )

    assert found(checks.raw_sql_fits_models()) == [("tasks.E005", "tasks.Task.owner")]


def test_a_field_the_statements_name_that_is_gone_is_refused() -> None:
    errors = checks.missing_fields({Task: ("heartbeat_at", "lease_until", "messages")})

    assert found(errors) == [("tasks.E006", "tasks.Task"), ("tasks.E006", "tasks.Task")]
    assert "'lease_until'" in errors[0].msg
    assert "'messages'" in errors[1].msg  # a reverse relation is no column


@isolate_apps("tasks")
def test_names_come_from_the_model_so_a_db_column_or_db_table_is_fine() -> None:
    class Note(models.Model):
        text = models.CharField(max_length=10, db_column="body")
        task = models.ForeignKey(Task, on_delete=models.CASCADE, db_column="owner_task")

        class Meta:
            app_label = "tasks"
            db_table = "hub_notes"

    assert checks.model_problems(Note) == []
    assert columns.table(Note) == '"hub_notes"'
    assert sql.insert_sql(Note, 2) == (
        'INSERT INTO "hub_notes" ("body", "owner_task") VALUES (%s, %s), (%s, %s)'
    )
