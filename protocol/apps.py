from __future__ import annotations

from django.apps import AppConfig


class ProtocolConfig(AppConfig):
    name = "protocol"

    def ready(self) -> None:
        # Executors reach other hosted agents through the handlers (executors.hub_calls).
        from executors import hub_calls
        from protocol import agent_calls

        hub_calls.sender = agent_calls.send
