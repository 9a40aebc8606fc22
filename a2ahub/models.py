"""The hub's own rows: the keys it signs with (push deliveries, backend calls, cards)."""

from __future__ import annotations

from django.db import models


class SigningKey(models.Model):
    """An ES256 key the hub signs with; retired keys stay published for a while."""

    kid = models.CharField(max_length=64, unique=True)
    private_pem = models.TextField()
    public_jwk = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)
    retired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # The table keeps the name it had when the keys lived in the push app.
        db_table = "push_signingkey"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.kid
