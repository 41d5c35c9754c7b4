"""KeyVault over AWS KMS: one AES-256 data key per candidate under the tenant key.

The encryption context binds tenant, workspace and candidate id: a wrapped key copied to
another candidate or scope does not decrypt. KMS failures map to constant contract errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from engram_memory.domain.errors import (
    BlobMissing,
    CapabilityUnavailable,
    EngramError,
    RateLimited,
    StoreUnavailable,
)
from engram_memory.services.ports import DataKey

_THROTTLED = frozenset({"ThrottlingException", "LimitExceededException"})
_KEY_UNUSABLE = frozenset({
    "DisabledException", "KMSInvalidStateException", "NotFoundException",
    "KeyUnavailableException", "AccessDeniedException",
})
_MATERIAL_UNUSABLE = frozenset({"InvalidCiphertextException", "IncorrectKeyException"})


def _translate(exc: ClientError | BotoCoreError) -> EngramError:
    if isinstance(exc, BotoCoreError):
        return StoreUnavailable()
    code = str(exc.response.get("Error", {}).get("Code", ""))
    if code in _THROTTLED:
        return RateLimited()
    if code in _KEY_UNUSABLE:
        return CapabilityUnavailable()
    if code in _MATERIAL_UNUSABLE:
        return BlobMissing()
    return StoreUnavailable()


class KmsKeyVault:
    """GenerateDataKey / Decrypt under one tenant key."""

    def __init__(self, client: Any, key_id: str) -> None:
        self._client = client
        self._key_id = key_id

    def generate_data_key(self, context: Mapping[str, str]) -> DataKey:
        """A fresh AES-256 data key bound to ``context``."""
        try:
            response = self._client.generate_data_key(
                KeyId=self._key_id, KeySpec="AES_256", EncryptionContext=dict(context))
        except (ClientError, BotoCoreError) as exc:
            raise _translate(exc) from exc
        return DataKey(plaintext=bytes(response["Plaintext"]),
                       wrapped=bytes(response["CiphertextBlob"]),
                       key_id=str(response["KeyId"]))

    def decrypt_data_key(self, wrapped: bytes, context: Mapping[str, str]) -> bytes:
        """Unwrap a data key (same encryption context, same tenant key)."""
        try:
            response = self._client.decrypt(
                CiphertextBlob=wrapped, KeyId=self._key_id, EncryptionContext=dict(context))
        except (ClientError, BotoCoreError) as exc:
            raise _translate(exc) from exc
        return bytes(response["Plaintext"])
