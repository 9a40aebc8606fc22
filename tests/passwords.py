"""The password hasher of the test process: the production one with one iteration, not a
million. A million take a third of a CPU second a hash, and most tests create or sign in a
user; the hashes it makes still read as `pbkdf2_sha256` in any hub process the tests start."""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class OneIterationPBKDF2(PBKDF2PasswordHasher):
    iterations = 1
