"""KeyVault over AWS KMS: one AES-256 data key per candidate under the tenant key.

The encryption context binds tenant, workspace and candidate id: a wrapped key copied to
another candidate or scope does not decrypt. KMS failures map to constant contract
errors (adapters/aws_errors.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engram_memory.adapters.aws_errors import AWS_FAILURES, translate_kms
from engram_memory.services.ports.write import DataKey


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
        except AWS_FAILURES as exc:
            raise translate_kms(exc) from exc
        return DataKey(plaintext=bytes(response["Plaintext"]),
                       wrapped=bytes(response["CiphertextBlob"]),
                       key_id=str(response["KeyId"]))

    def decrypt_data_key(self, wrapped: bytes, context: Mapping[str, str]) -> bytes:
        """Unwrap a data key (same encryption context, same tenant key)."""
        try:
            response = self._client.decrypt(
                CiphertextBlob=wrapped, KeyId=self._key_id, EncryptionContext=dict(context))
        except AWS_FAILURES as exc:
            raise translate_kms(exc) from exc
        return bytes(response["Plaintext"])
