"""Secrets the hub must use again later (a model server's API key, an MCP server's bearer
token), kept sealed at rest: Fernet (AES-128-CBC with an HMAC) under a key derived from
SECRET_KEY with HKDF, so a database dump alone does not hold them.

A sealed value is stored in place of the secret and opened only where it is used (an
executor's outbound call). Forms take a secret and never show it back; pages, cards, logs and
answers see at most whether one is stored. Changing SECRET_KEY makes stored secrets
unreadable: they must be typed again (`open_sealed` raises `Unreadable`).
"""

from __future__ import annotations

import base64
from functools import cache

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

# Sealed values start with this, so a stored value is known to be sealed, not a plain secret.
PREFIX = "sealed:v1:"


class Unreadable(ValueError):
    """The value is not sealed, or was sealed under another SECRET_KEY."""


@cache
def _fernet(secret_key: str) -> Fernet:
    derived = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=b"a2ahub-sealed", info=b"secrets at rest"
    ).derive(secret_key.encode())
    return Fernet(base64.urlsafe_b64encode(derived))


def seal(secret: str) -> str:
    return PREFIX + _fernet(settings.SECRET_KEY).encrypt(secret.encode()).decode()


def is_sealed(value: object) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


def open_sealed(value: str) -> str:
    if not is_sealed(value):
        raise Unreadable("not a sealed value")
    try:
        return _fernet(settings.SECRET_KEY).decrypt(value[len(PREFIX) :].encode()).decode()
    except InvalidToken:
        raise Unreadable("sealed under another SECRET_KEY: type the secret again") from None
