"""Secrets Manager: read one secret string (the page-cursor secret) by its ARN.

Failures map to constant contract errors: throttling → RATE_LIMITED; a secret that is
missing, undecryptable or not granted → CAPABILITY_UNAVAILABLE (paging cannot be offered
safely without it); anything else → STORE_UNAVAILABLE (retriable).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from engram_memory.domain.errors import (
    CapabilityUnavailable,
    EngramError,
    RateLimited,
    StoreUnavailable,
)

_THROTTLED = frozenset({"ThrottlingException", "TooManyRequestsException"})
_UNUSABLE = frozenset({
    "ResourceNotFoundException", "AccessDeniedException", "AccessDeniedFault",
    "DecryptionFailure", "InvalidRequestException",
})


def _translate(exc: ClientError | BotoCoreError) -> EngramError:
    if isinstance(exc, BotoCoreError):
        return StoreUnavailable()
    code = str(exc.response.get("Error", {}).get("Code", ""))
    if code in _THROTTLED:
        return RateLimited()
    if code in _UNUSABLE:
        return CapabilityUnavailable()
    return StoreUnavailable()


class SecretsManagerSecrets:
    """``GetSecretValue`` on a Secrets Manager client built by the composition root."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def secret_string(self, secret_id: str) -> str:
        """The current ``SecretString`` of ``secret_id``; a binary-only secret is unusable."""
        try:
            response = self._client.get_secret_value(SecretId=secret_id)
        except (ClientError, BotoCoreError) as exc:
            raise _translate(exc) from exc
        value = response.get("SecretString")
        if not isinstance(value, str) or not value:
            raise CapabilityUnavailable
        return value
