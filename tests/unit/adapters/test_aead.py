"""AES-256-GCM sealing: round trip, and any tampering or mis-binding fails closed."""

from __future__ import annotations

import os

import pytest
from engram_memory.adapters.crypto.aead import AesGcmSealer
from engram_memory.domain.errors import BlobMissing

KEY = os.urandom(32)
AAD = b'{"candidate_id":"cand_a","tenant":"t","workspace":"w"}'


def test_sealed_material_opens_with_the_same_key_and_binding() -> None:
    sealer = AesGcmSealer()
    sealed = sealer.seal(KEY, b"pending content", AAD)
    assert b"pending content" not in sealed
    assert sealer.open(KEY, sealed, AAD) == b"pending content"


def test_two_seals_of_the_same_plaintext_differ() -> None:
    sealer = AesGcmSealer()
    assert sealer.seal(KEY, b"x", AAD) != sealer.seal(KEY, b"x", AAD)


@pytest.mark.parametrize("mutate", [
    lambda s: s[:-1] + bytes([s[-1] ^ 1]),
    lambda s: s[:20],
    lambda s: b"\x02" + s[1:],
])
def test_altered_material_is_blob_missing(mutate) -> None:  # type: ignore[no-untyped-def]
    sealer = AesGcmSealer()
    with pytest.raises(BlobMissing):
        sealer.open(KEY, mutate(sealer.seal(KEY, b"content", AAD)), AAD)


def test_material_bound_to_another_candidate_or_key_does_not_open() -> None:
    sealer = AesGcmSealer()
    sealed = sealer.seal(KEY, b"content", AAD)
    with pytest.raises(BlobMissing):
        sealer.open(KEY, sealed, AAD.replace(b"cand_a", b"cand_b"))
    with pytest.raises(BlobMissing):
        sealer.open(os.urandom(32), sealed, AAD)
