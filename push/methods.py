"""Push notification config methods. Until delivery lands, an agent whose card offers push
refuses them as unsupported, and one that does not gets PushNotificationNotSupported."""

from __future__ import annotations

from typing import Any

from agents.calls import Call
from agents.errors import PushNotificationNotSupportedError, UnsupportedOperationError


async def push_config_method(call: Call, request: Any) -> Any:
    if not call.agent.push_notifications:
        raise PushNotificationNotSupportedError("This agent does not send push notifications.")
    raise UnsupportedOperationError("Push notification configs are not available on this hub yet.")
