"""A KeyVault without KMS: data keys wrapped under a key that lives in this process."""

from __future__ import annotations

import os
from collections.abc import Mapping

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from engram_memory.domain.canonical import canonical_json
from engram_memory.domain.errors import BlobMissing
from engram_memory.services.ports.write import DataKey

_NONCE = 12


class MemoryKeyVault:
    """Envelope keys as KMS gives them: bound to the encryption context, AES-256."""

    KEY_ID = "memory-key"

    def __init__(self) -> None:
        self._master = AESGCM(AESGCM.generate_key(bit_length=256))

    def generate_data_key(self, context: Mapping[str, str]) -> DataKey:
        """A fresh AES-256 data key and its wrapped form."""
        plaintext = AESGCM.generate_key(bit_length=256)
        nonce = os.urandom(_NONCE)
        wrapped = nonce + self._master.encrypt(nonce, plaintext, canonical_json(dict(context)))
        return DataKey(plaintext=plaintext, wrapped=wrapped, key_id=self.KEY_ID)

    def decrypt_data_key(self, wrapped: bytes, context: Mapping[str, str]) -> bytes:
        """The data key; BlobMissing when the wrapped key or the context does not match."""
        try:
            return self._master.decrypt(wrapped[:_NONCE], wrapped[_NONCE:],
                                        canonical_json(dict(context)))
        except InvalidTag as exc:  # another context or a damaged key
            raise BlobMissing from exc
