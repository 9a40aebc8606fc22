"""What is wrong with an OAuth2 application's redirect URIs, said of each URI.

django-oauth-toolkit's model does the checking, in its own words ("redirect uri URI Validation
error. invalid_scheme: ..."). The forms that make applications, the developer's and the
admin's, show these words instead when it refuses; where ours find nothing, its stand.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django import forms
from oauth2_provider.models import AbstractApplication

# The grants whose users are sent back to a redirect URI: django-oauth-toolkit needs one.
SENT_BACK = {AbstractApplication.GRANT_AUTHORIZATION_CODE, AbstractApplication.GRANT_IMPLICIT,
             AbstractApplication.GRANT_OPENID_HYBRID}  # fmt: skip
NONE_GIVEN = "People are sent back to a redirect URI after they consent: give at least one."


def redirect_problems(text: str, required: bool = True) -> list[str]:
    """What is wrong with each redirect URI of `text` (one a line, or apart by spaces, as
    django-oauth-toolkit splits them), or with having none when one is `required`."""
    uris = text.split()
    if not uris:
        return [NONE_GIVEN] if required else []
    return [problem for problem in map(redirect_problem, uris) if problem]


def redirect_problem(uri: str) -> str:
    try:
        parts = urlsplit(uri)
        host = parts.hostname
    except ValueError:
        return f"{uri} is not a URL."
    if parts.scheme.lower() not in ("http", "https"):
        return f"{uri} is not an http or https URL (one URI a line; a space ends a URI)."
    if not host:
        return f"{uri} names no host."
    if parts.fragment:
        return f"{uri} has a fragment (#{parts.fragment}), which a redirect URI may not have."
    return ""


class ReadableRedirectErrors(forms.ModelForm):
    """A form of applications whose refused redirect URIs are each named with what is wrong."""

    def full_clean(self) -> None:
        super().full_clean()  # with the model's checks: django-oauth-toolkit's, in its words
        if "redirect_uris" in self.errors:
            grant = getattr(self, "cleaned_data", {}).get("authorization_grant_type")
            ours = self.redirect_uri_problems(str(self.data.get("redirect_uris", "")), grant)
            if ours:
                self.errors["redirect_uris"] = self.error_class(ours)

    def redirect_uri_problems(self, text: str, grant: Any) -> list[str]:
        return redirect_problems(text, required=grant in SENT_BACK)
