"""Login throttling for the sign-in pages (developer pages and admin): after
`LOGIN_THROTTLE_ATTEMPTS` failed attempts for one username from one address within
`LOGIN_THROTTLE_WINDOW_SECONDS`, further attempts are refused with HTTP 429 until the window
ends, without checking the password (so guessing cannot go on).

Failures are counted by Django's `user_login_failed` signal, whatever form sent them, in the
default cache: Redis when `REDIS_URL` is set, so every web process counts together. A
successful sign-in clears its count. The address is the client's as the server sees it (behind
a proxy, the proxy's: then the count is effectively per username).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase

View = Callable[..., HttpResponseBase]


def counter_key(username: str, request: HttpRequest | None) -> str:
    address = request.META.get("REMOTE_ADDR", "") if request is not None else ""
    # Hashed: usernames and addresses are not written into the cache's keys as they are.
    digest = hashlib.sha256(f"{username.strip().lower()}|{address}".encode()).hexdigest()
    return f"login-failures:{digest}"


def failures(username: str, request: HttpRequest | None) -> int:
    return int(cache.get(counter_key(username, request), 0))


def record_failure(
    sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **_: Any
) -> None:
    if not settings.LOGIN_THROTTLE_ATTEMPTS:
        return
    key = counter_key(str(credentials.get("username", "")), request)
    # The window starts at the first failure; adding does nothing if it already runs.
    cache.add(key, 0, timeout=settings.LOGIN_THROTTLE_WINDOW_SECONDS)
    try:
        cache.incr(key)
    except ValueError:  # the window ended between the two calls: this failure starts anew
        cache.set(key, 1, timeout=settings.LOGIN_THROTTLE_WINDOW_SECONDS)


def clear_failures(sender: Any, request: HttpRequest | None, user: Any, **_: Any) -> None:
    if settings.LOGIN_THROTTLE_ATTEMPTS and request is not None:
        cache.delete(counter_key(user.get_username(), request))


def refusal() -> HttpResponse:
    minutes = max(1, round(settings.LOGIN_THROTTLE_WINDOW_SECONDS / 60))
    response = HttpResponse(
        f"Too many failed sign-in attempts for this username from your address. "
        f"Try again in {minutes} minute{'s' if minutes != 1 else ''}.\n",
        status=429,
        content_type="text/plain; charset=utf-8",
    )
    response["Retry-After"] = str(settings.LOGIN_THROTTLE_WINDOW_SECONDS)
    return response


def throttled(view: View) -> View:
    """The sign-in view, refusing a POST for a username that has failed too often."""

    @wraps(view)
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        limit = settings.LOGIN_THROTTLE_ATTEMPTS
        if (
            limit
            and request.method == "POST"
            and failures(request.POST.get("username", ""), request) >= limit
        ):
            return refusal()
        return view(request, *args, **kwargs)

    return guarded
