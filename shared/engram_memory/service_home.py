"""The local service's home on disk: its host signing key and identity file.

Read by the service (``engram_memory.local``) and by the commands that talk to the running
service from another terminal (``engram-memory token``, ``engram-memory confirm``), which
is why it sits outside ``local/``. The snapshot of memory state is ``local/state.py``'s.

The home directory is ``--data-dir`` when given, else ``$ENGRAM_LOCAL_HOME`` or
``~/.engram-memory``. It always holds the Ed25519 host signing key (``host_key.pem``,
0600) and ``local.json`` (issuer, audience, tenant, the endpoint last served), so
``engram-memory token`` can mint tokens for the running service from another terminal.
Only with ``--data-dir`` is memory state snapshotted (``state.json``) on a clean stop and
restored on the next start.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path

from engram_memory_host import HostKey

from engram_memory.settings import LocalSettings

HOST_KEY_FILE = "host_key.pem"
IDENTITY_FILE = "local.json"
LOCAL_ISSUER = "urn:engram:local-host"
LOCAL_AUDIENCE = "urn:engram:local"


def home_dir(data_dir: Path | None) -> Path:
    """Where the key and identity live (created 0700 on first use)."""
    home = (data_dir or LocalSettings.from_env().home).expanduser().resolve()
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    return home


@dataclass(frozen=True)
class LocalIdentity:
    """The local host registration: who signs tokens and for which audience and tenant."""

    issuer: str
    audience: str
    tenant: str
    page_cursor_secret: str
    endpoint: str = ""


def host_key(home: Path) -> HostKey:
    """The local host signing key (Ed25519, ``host_key.pem``), created 0600 on first use."""
    return HostKey.load_or_create(home / HOST_KEY_FILE)


def write_private(path: Path, text: str) -> None:
    """Write atomically with mode 0600 (the files can hold local secrets)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.touch(mode=0o600)
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def read_identity(home: Path) -> LocalIdentity | None:
    """The saved identity, or None before the first start."""
    path = home / IDENTITY_FILE
    if not path.is_file():
        return None
    return LocalIdentity(**json.loads(path.read_text(encoding="utf-8")))


def load_identity(home: Path, tenant: str | None) -> LocalIdentity:
    """The saved identity (created on first start; ``tenant`` overrides the saved one)."""
    saved = read_identity(home)
    identity = saved or LocalIdentity(LOCAL_ISSUER, LOCAL_AUDIENCE, tenant or "local",
                                      secrets.token_urlsafe(32))
    if tenant and tenant != identity.tenant:
        identity = LocalIdentity(identity.issuer, identity.audience, tenant,
                                 identity.page_cursor_secret, identity.endpoint)
    if identity != saved:
        write_private(home / IDENTITY_FILE, json.dumps(asdict(identity), indent=2))
    return identity


def write_endpoint(home: Path, endpoint: str) -> None:
    """Record the served endpoint so ``engram-memory token`` can print it."""
    identity = read_identity(home)
    if identity is not None:
        updated = LocalIdentity(identity.issuer, identity.audience, identity.tenant,
                                identity.page_cursor_secret, endpoint)
        write_private(home / IDENTITY_FILE, json.dumps(asdict(updated), indent=2))
