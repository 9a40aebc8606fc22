"""App configuration for the project layer, whose rows are the hub's own (its signing keys)."""

from __future__ import annotations

from django.apps import AppConfig


class HubConfig(AppConfig):
    name = "a2ahub"
    verbose_name = "A2A Hub"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The hub's own origin, from configuration (never from a request's Host header), so
        # its built-in inbox can receive deliveries without opening loopback to every caller.
        from django.conf import settings
        from django.contrib.auth.signals import user_logged_in, user_login_failed
        from django.db.backends.signals import connection_created

        from a2ahub import dbpool, outages, protobuf_strings, tracing
        from a2ahub.login_throttle import clear_failures, record_failure
        from a2ahub.outbound import register_own_origin

        register_own_origin(f"http://{settings.HOST}:{settings.PORT}")
        if settings.HOST in ("127.0.0.1", "0.0.0.0"):
            register_own_origin(f"http://localhost:{settings.PORT}")
        # Failed and successful sign-ins, whichever form sent them, feed the login throttle.
        user_login_failed.connect(record_failure, dispatch_uid="a2ahub.login_throttle.failure")
        user_logged_in.connect(clear_failures, dispatch_uid="a2ahub.login_throttle.success")
        dbpool.install()
        protobuf_strings.install()
        # Before any job, request or connection: instrumentations patch what those use.
        tracing.setup(commands=settings.TRACE_COMMANDS)
        if dbpool.drain not in outages.DATABASE.on_began:
            outages.DATABASE.on_began.append(dbpool.drain)
        # Django makes (or takes from its pool) a connection only once the database answered.
        connection_created.connect(
            database_answered, dispatch_uid="a2ahub.outages.database_answered"
        )


def database_answered(**kwargs: object) -> None:
    from a2ahub import outages

    outages.DATABASE.answered()
