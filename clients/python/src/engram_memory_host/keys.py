"""Host signing keys (Ed25519 or P-256), their public JWK and the key set a tenant trusts."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

PrivateKey = ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey
KeyType = Literal["Ed25519", "P-256"]
MAX_HOST_KEYS = 8


def _checked(key: object) -> PrivateKey:
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return key
    if isinstance(key, ec.EllipticCurvePrivateKey) and isinstance(key.curve, ec.SECP256R1):
        return key
    raise ValueError("a host key must be an Ed25519 or EC P-256 private key")


def default_kid(key: PrivateKey) -> str:
    """``host-`` + 16 hex digits of the SHA-256 of the public key's SPKI DER (stable)."""
    der = key.public_key().public_bytes(serialization.Encoding.DER,
                                        serialization.PublicFormat.SubjectPublicKeyInfo)
    return "host-" + hashlib.sha256(der).hexdigest()[:16]


@dataclass(frozen=True)
class HostKey:
    """A host's private signing key and the ``kid`` the tenant knows it by."""

    private_key: PrivateKey
    kid: str

    @classmethod
    def generate(cls, kind: KeyType = "Ed25519", kid: str | None = None) -> HostKey:
        """A fresh key of ``kind``."""
        key: PrivateKey = (ed25519.Ed25519PrivateKey.generate() if kind == "Ed25519"
                           else ec.generate_private_key(ec.SECP256R1()))
        return cls(key, kid or default_kid(key))

    @classmethod
    def from_pem(cls, pem: bytes | str, kid: str | None = None) -> HostKey:
        """An unencrypted PKCS#8 (or SEC1) PEM private key."""
        data = pem.encode("ascii") if isinstance(pem, str) else pem
        key = _checked(serialization.load_pem_private_key(data, password=None))
        return cls(key, kid or default_kid(key))

    @classmethod
    def load(cls, path: Path, kid: str | None = None) -> HostKey:
        """The PEM private key in ``path``."""
        return cls.from_pem(path.read_bytes(), kid)

    @classmethod
    def load_or_create(cls, path: Path) -> HostKey:
        """The key in ``path``, or a new Ed25519 key written there (mode 0600)."""
        if path.exists():
            return cls.load(path)
        key = cls.generate()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_bytes(key.private_pem())
        return key

    def __post_init__(self) -> None:
        """Refuse other key types and an empty kid."""
        _checked(self.private_key)
        if not self.kid:
            raise ValueError("a host key needs a kid")

    @property
    def algorithm(self) -> str:
        """``EdDSA`` (Ed25519) or ``ES256`` (P-256): the only algorithm the key signs with."""
        return "EdDSA" if isinstance(self.private_key, ed25519.Ed25519PrivateKey) else "ES256"

    def private_pem(self) -> bytes:
        """Unencrypted PKCS#8 PEM (keep it secret; file mode 0600)."""
        return self.private_key.private_bytes(serialization.Encoding.PEM,
                                              serialization.PrivateFormat.PKCS8,
                                              serialization.NoEncryption())

    def public_pem(self) -> str:
        """SubjectPublicKeyInfo PEM of the public half."""
        return self.private_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ).decode("ascii")

    def public_jwk(self) -> dict[str, Any]:
        """The public JWK with ``kid``, ``alg`` and ``use``: one entry of the tenant
        config's ``host.keys`` (and of ``ENGRAM_HOST_JWKS``)."""
        public = self.private_key.public_key()
        if isinstance(public, ed25519.Ed25519PublicKey):
            jwk: dict[str, Any] = jwt.algorithms.OKPAlgorithm.to_jwk(public, as_dict=True)
        else:
            jwk = jwt.algorithms.ECAlgorithm.to_jwk(public, as_dict=True)
        return {**jwk, "kid": self.kid, "alg": self.algorithm, "use": "sig"}


@dataclass
class HostKeyRing:
    """The keys a tenant trusts and the one that signs; rotation in three calls.

    ``add(new)`` → publish ``jwks()`` to the tenant; ``sign_with(new.kid)`` once the tenant
    trusts it; ``retire(old.kid)`` once no token of the old key is still live (≤ 300 s).
    """

    keys: list[HostKey] = field(default_factory=list)
    signing_kid: str = ""

    def __post_init__(self) -> None:
        """The first key signs by default."""
        if self.keys and not self.signing_kid:
            self.signing_kid = self.keys[0].kid

    @property
    def signing(self) -> HostKey:
        """The key tokens are signed with now."""
        return next(k for k in self.keys if k.kid == self.signing_kid)

    def add(self, key: HostKey) -> None:
        """Trust ``key`` too (it does not sign yet)."""
        if any(k.kid == key.kid for k in self.keys):
            raise ValueError("kid already in the key ring")
        if len(self.keys) >= MAX_HOST_KEYS:
            raise ValueError(f"a tenant trusts at most {MAX_HOST_KEYS} host keys")
        self.keys.append(key)
        if not self.signing_kid:
            self.signing_kid = key.kid

    def sign_with(self, kid: str) -> None:
        """Sign from now on with the key ``kid`` (already added and published)."""
        if not any(k.kid == kid for k in self.keys):
            raise ValueError("no such kid in the key ring")
        self.signing_kid = kid

    def retire(self, kid: str) -> None:
        """Stop trusting ``kid`` (never the signing key)."""
        if kid == self.signing_kid:
            raise ValueError("the signing key cannot be retired; sign_with another first")
        self.keys = [k for k in self.keys if k.kid != kid]

    def jwks(self) -> dict[str, Any]:
        """``{"keys": [...]}``: what the tenant config's ``host.keys`` holds."""
        return {"keys": [k.public_jwk() for k in self.keys]}

    def jwks_json(self) -> str:
        """``jwks()`` as compact JSON (``ENGRAM_HOST_JWKS``)."""
        return json.dumps(self.jwks(), separators=(",", ":"))
