"""AES-256-GCM sealing of candidate material (``cryptography``'s AESGCM).

Layout: version byte ``0x01`` · 12-byte random nonce · ciphertext+tag. The AAD binds the
scope and candidate id, so sealed bytes moved to another candidate do not open.
"""

from __future__ import annotations

import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from engram_memory.domain.errors import BlobMissing

_VERSION = b"\x01"
_NONCE_BYTES = 12


class AesGcmSealer:
    """Sealer with a fresh random nonce per seal (one data key per candidate anyway)."""

    def seal(self, key: bytes, plaintext: bytes, aad: bytes) -> bytes:
        """Encrypt and authenticate ``plaintext`` bound to ``aad``."""
        nonce = os.urandom(_NONCE_BYTES)
        return _VERSION + nonce + AESGCM(key).encrypt(nonce, plaintext, aad)

    def open(self, key: bytes, sealed: bytes, aad: bytes) -> bytes:
        """Decrypt; BlobMissing when the bytes are truncated, altered or mis-bound."""
        if len(sealed) < 1 + _NONCE_BYTES + 16 or sealed[:1] != _VERSION:
            raise BlobMissing
        nonce, body = sealed[1:1 + _NONCE_BYTES], sealed[1 + _NONCE_BYTES:]
        try:
            return AESGCM(key).decrypt(nonce, body, aad)
        except InvalidTag:
            raise BlobMissing from None
