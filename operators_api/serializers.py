"""What the operators' API reads and writes. Agents are judged as the admin judges them: the
kind checks its settings, requirements name declared schemes, and the official SDK's 0.3 and
1.0 models must both accept the card (agents.cards.validate_agent_card); a refusal names the
field. API keys show their secret once, in the answer that creates them; push configs never
show their token or credentials."""

from __future__ import annotations

import copy
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents import kinds
from agents.cards import validate_agent_card
from agents.forms import AgentForm, validate_executor_settings
from agents.models import KEY_BOUND_SCOPES, Agent, ApiKey, KeyScope, Skill
from agents.validators import validate_security_requirements_reference
from push.models import Delivery, DeliveryAttempt
from registry.models import Registration
from tasks.models import Task

# The agent's fields an operator may write: the admin form's, and who may call it.
AGENT_FIELDS = [*AgentForm.Meta.fields, "access", "oauth2"]
SKILL_FIELDS = [
    "skill_id", "name", "description", "tags", "examples", "input_modes", "output_modes",
    "security_requirements", "extended_only", "position",
]  # fmt: skip


def as_drf_error(exc: DjangoValidationError, default_field: str) -> serializers.ValidationError:
    """A model-level refusal, keyed by the API's field names ("__all__" is the card)."""
    if hasattr(exc, "error_dict"):
        return serializers.ValidationError(
            {
                (default_field if field == "__all__" else field): [
                    message for error in errors for message in error.messages
                ]
                for field, errors in exc.error_dict.items()
            }
        )
    return serializers.ValidationError({default_field: exc.messages})


class SkillSerializer(serializers.ModelSerializer[Skill]):
    class Meta:
        model = Skill
        fields = SKILL_FIELDS
        # Unique per agent: the agent's serializer checks the ids of the whole list.
        validators: list[Any] = []


class AgentSerializer(serializers.ModelSerializer[Agent]):
    """An agent with its skills. Writing `skills` replaces them all; leaving it out of a
    PATCH keeps them. The card is judged whole, with the skills it will have."""

    skills = SkillSerializer(many=True, required=False)
    owner = serializers.SlugRelatedField(
        slug_field="username", queryset=get_user_model().objects.all(),
        required=False, allow_null=True,
    )  # fmt: skip
    card_url = serializers.SerializerMethodField()

    class Meta:
        model = Agent
        fields = ["id", *AGENT_FIELDS, "skills", "card_url", "limit_hits", "last_limit_hit",
                  "last_limit_hit_at", "created_at", "updated_at"]  # fmt: skip
        read_only_fields = ["id", "limit_hits", "last_limit_hit", "last_limit_hit_at",
                            "created_at", "updated_at"]  # fmt: skip

    def get_card_url(self, agent: Agent) -> str:
        return f"/agents/{agent.slug}/.well-known/agent-card.json"

    def to_representation(self, instance: Agent) -> dict[str, Any]:
        data = super().to_representation(instance)
        data["executor_settings"] = kinds.shown_settings(
            instance.executor_kind, instance.executor_settings or {}
        )
        return data

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "executor_settings" in attrs:
            attrs["executor_settings"] = self.written_settings(attrs)
        skills_data = attrs.get("skills")
        if self.instance is None and not skills_data:
            raise serializers.ValidationError(
                {"skills": ["An agent needs at least one skill: both card versions list them."]}
            )
        # A copy to judge: the stored agent changes only once the whole card is accepted.
        agent = copy.copy(self.instance) if self.instance is not None else Agent()
        for field, value in attrs.items():
            if field != "skills":
                setattr(agent, field, value)
        if skills_data is not None:
            ids = [s["skill_id"] for s in skills_data]
            if len(ids) != len(set(ids)):
                raise serializers.ValidationError({"skills": ["Each skill needs its own id."]})
            skills = [Skill(agent=agent, **s) for s in skills_data]
        else:
            skills = list(self.instance.skills.all()) if self.instance is not None else []
        self.judge(agent, skills)
        return attrs

    def written_settings(self, attrs: dict[str, Any]) -> dict[str, Any]:
        stored = self.instance.executor_settings if self.instance is not None else {}
        kind = str(attrs.get("executor_kind") or getattr(self.instance, "executor_kind", ""))
        try:
            return kinds.written_settings(kind, attrs["executor_settings"] or {}, stored or {})
        except DjangoValidationError as exc:
            raise as_drf_error(exc, "executor_settings") from exc

    @staticmethod
    def judge(agent: Agent, skills: list[Skill]) -> None:
        try:
            validate_executor_settings(agent.executor_kind, agent.executor_settings or {})
        except DjangoValidationError as exc:
            raise as_drf_error(exc, "executor_settings") from exc
        schemes = agent.security_schemes or {}
        try:
            validate_security_requirements_reference(agent.security_requirements, schemes)
        except DjangoValidationError as exc:
            raise as_drf_error(exc, "security_requirements") from exc
        for index, skill in enumerate(skills):
            try:
                validate_security_requirements_reference(skill.security_requirements, schemes)
            except DjangoValidationError as exc:
                raise serializers.ValidationError(
                    {"skills": {index: {"security_requirements": exc.messages}}}
                ) from exc
        try:
            validate_agent_card(agent, skills)
        except DjangoValidationError as exc:
            raise as_drf_error(exc, "card") from exc

    @transaction.atomic
    def create(self, validated_data: dict[str, Any]) -> Agent:
        skills = validated_data.pop("skills")
        agent = Agent.objects.create(**validated_data)
        Skill.objects.bulk_create(Skill(agent=agent, **s) for s in skills)
        return agent

    @transaction.atomic
    def update(self, instance: Agent, validated_data: dict[str, Any]) -> Agent:
        skills = validated_data.pop("skills", None)
        for field, value in validated_data.items():
            setattr(instance, field, value)
        instance.save()
        if skills is not None:
            instance.skills.all().delete()
            Skill.objects.bulk_create(Skill(agent=instance, **s) for s in skills)
        return instance


class ApiKeySerializer(serializers.ModelSerializer[ApiKey]):
    owner = serializers.SlugRelatedField(
        slug_field="username", queryset=get_user_model().objects.all(),
        required=False, allow_null=True,
    )  # fmt: skip
    agent = serializers.SlugRelatedField(
        slug_field="slug", queryset=Agent.objects.all(), required=False, allow_null=True,
        help_text="Empty: the key works for every agent.",
    )  # fmt: skip
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=KeyScope.choices), required=False, default=list,
        help_text="What a hub-wide key may do besides calling agents ('registry': register "
        "agents). None unless chosen.",
    )  # fmt: skip
    key = serializers.SerializerMethodField(help_text="The key's visible beginning.")
    active = serializers.SerializerMethodField()

    class Meta:
        model = ApiKey
        fields = ["id", "name", "owner", "agent", "scopes", "key", "active", "created_at",
                  "last_used_at", "revoked_at"]  # fmt: skip
        read_only_fields = ["id", "created_at", "last_used_at", "revoked_at"]

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        if data.get("agent") is not None and data.get("scopes"):
            raise serializers.ValidationError({"scopes": [KEY_BOUND_SCOPES]})
        return data

    def get_key(self, key: ApiKey) -> str:
        return f"a2a_{key.prefix}_…"

    def get_active(self, key: ApiKey) -> bool:
        return key.revoked_at is None


class NewApiKeySerializer(ApiKeySerializer):
    """The answer that creates a key: the one time its secret is shown."""

    secret = serializers.CharField(
        read_only=True, help_text="The whole key. Shown only in this answer; it is not kept."
    )

    class Meta(ApiKeySerializer.Meta):
        fields = [*ApiKeySerializer.Meta.fields, "secret"]


class TaskSerializer(serializers.ModelSerializer[Task]):
    agent = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = Task
        fields = ["id", "agent", "owner", "context_id", "client_id", "state", "status_message",
                  "status_timestamp", "metadata", "protocol_version", "binding",
                  "execution_mode", "runner", "heartbeat_at", "last_error", "created_at",
                  "updated_at"]  # fmt: skip
        read_only_fields = fields


class AttemptSerializer(serializers.ModelSerializer[DeliveryAttempt]):
    class Meta:
        model = DeliveryAttempt
        fields = ["started_at", "duration_ms", "status_code", "error", "response_excerpt"]
        read_only_fields = fields


class DeliverySerializer(serializers.ModelSerializer[Delivery]):
    task = serializers.UUIDField(source="config.task_id", read_only=True)
    config_id = serializers.CharField(source="config.config_id", read_only=True)
    url = serializers.URLField(source="config.url", read_only=True)

    class Meta:
        model = Delivery
        fields = [
            "id", "task", "config_id", "url", "sequence", "state", "attempts",
            "next_attempt_at", "delivered_at", "last_error", "test", "created_at",
        ]  # fmt: skip
        read_only_fields = fields


class DeliveryDetailSerializer(DeliverySerializer):
    attempts_made = AttemptSerializer(many=True, read_only=True)

    class Meta(DeliverySerializer.Meta):
        fields = [*DeliverySerializer.Meta.fields, "attempts_made"]
        read_only_fields = fields


class RegistrationSerializer(serializers.ModelSerializer[Registration]):
    agent = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    expired = serializers.SerializerMethodField()
    # Empty for a card sent in the body: the schema must say so (DRF drops allow_blank from
    # the read-only field it would make).
    card_url = serializers.URLField(read_only=True, allow_blank=True)

    class Meta:
        model = Registration
        fields = [
            "registration_id", "agent", "owner_principal", "source", "protocol_version",
            "ttl_seconds", "expires_at", "expired", "renewed_at", "card_url", "category",
            "tags", "health", "checked_at", "last_error", "created_at", "updated_at",
        ]  # fmt: skip
        read_only_fields = fields

    @extend_schema_field(serializers.BooleanField())
    def get_expired(self, registration: Registration) -> bool:
        return registration.is_expired()
