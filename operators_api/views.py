"""The operators' API: agents with their skills, API keys, tasks, push deliveries and
registrations. Everything changes the way the admin changes it: a task is canceled through
tasks.writer, which stops its run too, a delivery is replayed as a new delivery of the
same event, a registration is revoked by removing its agent, a change to who may call an
agent goes to the audit log."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.http import QueryDict
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.pagination import CursorPagination
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from agents import audit
from agents.lookup import forget_agents
from agents.models import AccessVia, Agent, ApiKey
from operators_api import errors
from operators_api.auth import AUTHENTICATION, IsOperator, operator_name
from operators_api.errors import Conflict
from operators_api.parsers import PARSERS
from operators_api.serializers import (
    AgentSerializer,
    ApiKeySerializer,
    DeliveryDetailSerializer,
    DeliverySerializer,
    NewApiKeySerializer,
    RegistrationSerializer,
    TaskSerializer,
)
from push import engine
from push.models import Delivery, DeliveryState
from registry import actions as registry_actions
from registry.errors import ApiError, refuse_uncarriable
from registry.models import Registration
from tasks.admin import cancel_all
from tasks.models import Task, TaskState


class Pages(CursorPagination):
    page_size = 50
    max_page_size = 500
    page_size_query_param = "limit"


class NewestFirst(Pages):
    ordering = ("-created_at",)


class LatestDueFirst(Pages):
    ordering = ("-next_attempt_at",)


class BySlug(Pages):
    ordering = ("slug",)


class ByRegistrationId(Pages):
    ordering = ("registration_id",)


class OperatorView(viewsets.GenericViewSet[Any]):
    authentication_classes = AUTHENTICATION
    permission_classes = [IsOperator]
    # The browsable pages use DRF's own static files: nothing is loaded from elsewhere.
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer]
    parser_classes = PARSERS

    def get_exception_handler(self) -> Any:
        return errors.handle

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        refuse_uncarriable(kwargs | request.query_params.dict(), "path")
        data = request.data
        if isinstance(data, QueryDict):  # a form: each field's value, or its values
            data = {name: v[0] if len(v) == 1 else v for name, v in data.lists()}
        refuse_uncarriable(data)


class ByUuid(OperatorView):
    """Rows named by a UUID (`noun`: "task"): a malformed id is a row that does not exist."""

    noun = ""

    def get_object(self) -> Any:
        try:
            pk = uuid.UUID(str(self.kwargs["pk"]))
        except ValueError:
            raise ApiError(404, f"No such {self.noun}: {self.noun} ids are UUIDs.", "id") from None
        found = self.get_queryset().filter(pk=pk).first()
        if found is None:
            raise ApiError(404, f"No {self.noun} {pk}.", "id")
        return found

    def state_asked(self, states: list[str]) -> str:
        """The `state` filter's value, one of `states`."""
        state = self.request.query_params["state"]
        if state not in states:
            raise ApiError(400, f"Not a {self.noun} state: {state!r}.", "state")
        return state


def filter_param(name: str, description: str, enum: list[str] | None = None) -> OpenApiParameter:
    return OpenApiParameter(name, OpenApiTypes.STR, OpenApiParameter.QUERY, required=False,
                            description=description, enum=enum)  # fmt: skip


@extend_schema_view(
    list=extend_schema(summary="List agents", tags=["agents"]),
    retrieve=extend_schema(summary="Read an agent with its skills", tags=["agents"]),
    create=extend_schema(
        summary="Create an agent (its card is judged by both versions' models)", tags=["agents"]
    ),
    update=extend_schema(summary="Replace an agent", tags=["agents"]),
    partial_update=extend_schema(summary="Change some of an agent's fields", tags=["agents"]),
    destroy=extend_schema(summary="Delete an agent with its tasks", tags=["agents"]),
)
class AgentViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
    mixins.UpdateModelMixin, mixins.DestroyModelMixin, OperatorView,
):  # fmt: skip
    serializer_class = AgentSerializer
    lookup_field = "slug"
    pagination_class = BySlug

    def get_queryset(self) -> QuerySet[Agent]:
        return Agent.objects.select_related("owner").prefetch_related("skills").order_by("slug")

    @transaction.atomic
    def perform_create(self, serializer: BaseSerializer[Agent]) -> None:
        agent = serializer.save()
        self.log_access(agent, audit.snapshot_of_new_agent())

    @transaction.atomic
    def perform_update(self, serializer: BaseSerializer[Agent]) -> None:
        assert serializer.instance is not None
        before = audit.snapshot(serializer.instance)
        self.log_access(serializer.save(), before)

    def log_access(self, agent: Agent, before: dict[str, Any]) -> None:
        after = audit.snapshot(agent)
        audit.record_access_change(agent, self.request.user, AccessVia.OPERATORS_API, before, after)

    def perform_destroy(self, instance: Agent) -> None:
        instance.delete()
        forget_agents()


@extend_schema_view(
    list=extend_schema(summary="List API keys (never their secrets)", tags=["api keys"]),
    retrieve=extend_schema(summary="Read an API key (never its secret)", tags=["api keys"]),
    create=extend_schema(
        summary="Issue an API key",
        tags=["api keys"],
        responses={201: NewApiKeySerializer},
        description="The answer carries the whole key in `secret`: the only time it is shown.",
    ),
)
class ApiKeyViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, OperatorView
):
    serializer_class = ApiKeySerializer
    pagination_class = NewestFirst

    def get_queryset(self) -> QuerySet[ApiKey]:
        return ApiKey.objects.select_related("owner", "agent")

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        incoming = ApiKeySerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        key, secret = ApiKey.issue(
            data["name"], data.get("owner"), data.get("agent"), data.get("scopes")
        )
        key.secret = secret  # type: ignore[attr-defined]  # this answer only; never stored
        return Response(NewApiKeySerializer(key).data, status=status.HTTP_201_CREATED)

    @extend_schema(summary="Revoke an API key (clients using it are refused)",
                   tags=["api keys"], request=None, responses={200: ApiKeySerializer})  # fmt: skip
    @action(detail=True, methods=["post"])
    def revoke(self, request: Request, pk: str) -> Response:
        key = self.get_object()
        ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
        key.refresh_from_db()
        return Response(ApiKeySerializer(key).data)


@extend_schema_view(
    list=extend_schema(
        summary="List tasks, newest first (cursor pages)", tags=["tasks"],
        parameters=[
            filter_param("agent", "The agent's slug."),
            filter_param("state", "The task's state.", [s.value for s in TaskState]),
            filter_param("owner", 'The principal that created it ("user:3", "apikey:12").'),
        ],
    ),
    retrieve=extend_schema(summary="Read a task", tags=["tasks"]),
)  # fmt: skip
class TaskViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ByUuid):
    noun = "task"
    serializer_class = TaskSerializer
    pagination_class = NewestFirst

    def get_queryset(self) -> QuerySet[Task]:
        tasks = Task.objects.select_related("agent")
        if self.action != "list":
            return tasks
        params = self.request.query_params
        if params.get("agent"):
            tasks = tasks.filter(agent__slug=params["agent"])
        if params.get("state"):
            tasks = tasks.filter(state=self.state_asked(TaskState.values))
        if params.get("owner"):
            tasks = tasks.filter(owner=params["owner"])
        return tasks

    @extend_schema(summary="Cancel a task (as the admin does, through its lifecycle)",
                   tags=["tasks"], request=None, responses={200: TaskSerializer})  # fmt: skip
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str) -> Response:
        task = self.get_object()
        _, refused = cancel_all([task], f"Canceled by the operator {operator_name(request)}.")
        if refused:
            raise Conflict(f"The task is not cancelable: it is already {refused[0].state}.", "id")
        task.refresh_from_db()
        return Response(TaskSerializer(task).data)


@extend_schema_view(
    list=extend_schema(
        summary="List push deliveries, latest due first (cursor pages)", tags=["push"],
        parameters=[
            filter_param("task", "The task's id."),
            filter_param("state", "The delivery's state.", [s.value for s in DeliveryState]),
        ],
    ),
    retrieve=extend_schema(summary="Read a delivery with its attempts", tags=["push"],
                           responses={200: DeliveryDetailSerializer}),
)  # fmt: skip
class DeliveryViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ByUuid):
    noun = "delivery"
    pagination_class = LatestDueFirst

    def get_serializer_class(self) -> type[BaseSerializer[Any]]:
        return DeliveryDetailSerializer if self.action == "retrieve" else DeliverySerializer

    def get_queryset(self) -> QuerySet[Delivery]:
        deliveries = Delivery.objects.select_related("config")
        if self.action == "retrieve":
            return deliveries.prefetch_related("attempts_made")
        params = self.request.query_params
        if params.get("task"):
            try:
                task_id = uuid.UUID(params["task"])
            except ValueError:
                raise ApiError(400, "Task ids are UUIDs.", "task") from None
            deliveries = deliveries.filter(config__task_id=task_id)
        if params.get("state"):
            deliveries = deliveries.filter(state=self.state_asked(DeliveryState.values))
        return deliveries

    @extend_schema(summary="Replay a delivery: deliver its event again, as a new delivery",
                   tags=["push"], request=None, responses={202: DeliverySerializer})  # fmt: skip
    @action(detail=True, methods=["post"])
    def replay(self, request: Request, pk: str) -> Response:
        original = self.get_object()
        with transaction.atomic():
            again = Delivery.objects.create(
                config=original.config, event_id=original.event_id, sequence=original.sequence,
                next_attempt_at=timezone.now(),
            )  # fmt: skip
            transaction.on_commit(engine.wake)
        again = Delivery.objects.select_related("config").get(pk=again.pk)
        return Response(DeliverySerializer(again).data, status=status.HTTP_202_ACCEPTED)


@extend_schema_view(
    list=extend_schema(summary="List registrations", tags=["registrations"]),
    retrieve=extend_schema(summary="Read a registration", tags=["registrations"]),
)
class RegistrationViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, OperatorView):
    serializer_class = RegistrationSerializer
    lookup_field = "registration_id"
    pagination_class = ByRegistrationId

    def get_queryset(self) -> QuerySet[Registration]:
        return Registration.objects.select_related("agent").order_by("registration_id")

    @extend_schema(summary="Revoke a registration: its agent is removed now",
                   tags=["registrations"], request=None, responses={204: None})  # fmt: skip
    @action(detail=True, methods=["post"])
    def revoke(self, request: Request, registration_id: str) -> Response:
        registry_actions.revoke(self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)
