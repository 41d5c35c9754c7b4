"""Secrets Manager: read one secret string (the page-cursor secret) by its ARN.

Failures map to constant contract errors: throttling → RATE_LIMITED; a secret that is
missing, undecryptable or not granted → CAPABILITY_UNAVAILABLE (paging cannot be offered
safely without it); anything else → STORE_UNAVAILABLE (retriable). The codes are read in
adapters/aws_errors.py.
"""

from __future__ import annotations

from typing import Any

from engram_memory.adapters.aws_errors import AWS_FAILURES, translate_secrets
from engram_memory.domain.errors import CapabilityUnavailable


class SecretsManagerSecrets:
    """``GetSecretValue`` on a Secrets Manager client built by the composition root."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def secret_string(self, secret_id: str) -> str:
        """The current ``SecretString`` of ``secret_id``; a binary-only secret is unusable."""
        try:
            response = self._client.get_secret_value(SecretId=secret_id)
        except AWS_FAILURES as exc:
            raise translate_secrets(exc) from exc
        value = response.get("SecretString")
        if not isinstance(value, str) or not value:
            raise CapabilityUnavailable
        return value
