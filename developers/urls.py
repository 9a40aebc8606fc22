"""URLs of the developer pages, under /dev/."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from a2ahub.login_throttle import throttled
from developers import agent_access, applications, chat, llm_check, task_pages, views

app_name = "developers"

urlpatterns = [
    path(
        "login/",
        throttled(
            auth_views.LoginView.as_view(
                template_name="developers/login.html",
                next_page="developers:agents",
                redirect_authenticated_user=True,
            )
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(next_page="home"), name="logout"),
    path("agents/", views.agent_list, name="agents"),
    path("register/", views.agent_create, name="agent-new"),
    path("register/preview/", views.preview_new, name="preview-new"),
    path("import/", views.agent_import, name="agent-import"),
    path("llm/check/", llm_check.llm_check, name="llm-check"),
    path("agents/<str:slug>/", views.agent_detail, name="agent"),
    path("agents/<str:slug>/edit/", views.agent_edit, name="agent-edit"),
    path("agents/<str:slug>/preview/", views.preview_existing, name="preview"),
    path("agents/<str:slug>/resync/", views.agent_resync, name="resync"),
    path("agents/<str:slug>/try/", views.try_message, name="try"),
    path("agents/<str:slug>/keys/", views.key_list, name="keys"),
    path("agents/<str:slug>/keys/<int:key_id>/revoke/", views.key_revoke, name="key-revoke"),
    path("agents/<str:slug>/tasks/", views.task_list, name="tasks"),
    path("agents/<str:slug>/tasks/<uuid:task_id>/", task_pages.task_detail, name="task"),
    path("agents/<str:slug>/tasks/<uuid:task_id>/body/", task_pages.task_body, name="task-body"),
    path("agents/<str:slug>/tasks/<uuid:task_id>/file/", task_pages.task_file, name="task-file"),
    path("agents/<str:slug>/access/", agent_access.agent_access, name="agent-access"),
    path("applications/", applications.application_list, name="applications"),
    path(
        "applications/<int:pk>/delete/",
        applications.application_delete,
        name="application-delete",
    ),
    path("agents/<str:slug>/chat/", chat.chat_page, name="chat"),
    path("agents/<str:slug>/chat/send/", chat.chat_send, name="chat-send"),
    path("agents/<str:slug>/chat/cancel/", chat.chat_cancel, name="chat-cancel"),
    path("agents/<str:slug>/chat/file/", chat.chat_file, name="chat-file"),
]
