"""Local service state on disk: the host key, the local identity and the snapshot.

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
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from engram_memory_host import HostKey

from engram_memory import env_names
from engram_memory.adapters.dynamodb.projection_generations import LEGACY_GENERATION
from engram_memory.domain.ranking import PROJECTION_GENERATION
from engram_memory.local import moto_s3vectors, moto_snapshot
from engram_memory.local.moto_server import MOTO_ACCOUNT_ID
from engram_memory.local.provisioning import create_tables, provision_environment
from engram_memory.settings import LocalSettings, Settings

HOST_KEY_FILE = "host_key.pem"
IDENTITY_FILE = "local.json"
SNAPSHOT_FILE = "state.json"
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


def _write_private(path: Path, text: str) -> None:
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
        _write_private(home / IDENTITY_FILE, json.dumps(asdict(identity), indent=2))
    return identity


def write_endpoint(home: Path, endpoint: str) -> None:
    """Record the served endpoint so ``engram-memory token`` can print it."""
    identity = read_identity(home)
    if identity is not None:
        updated = LocalIdentity(identity.issuer, identity.audience, identity.tenant,
                                identity.page_cursor_secret, endpoint)
        _write_private(home / IDENTITY_FILE, json.dumps(asdict(updated), indent=2))


def client_factory(settings: Settings) -> Callable[[str], Any]:
    """boto3 clients on the moto server, by service name."""
    def make(name: str) -> Any:
        return moto_snapshot.aws_client(name, settings.region, settings.endpoint_url)

    return make


def _s3vectors_client(settings: Settings) -> Any:
    return moto_snapshot.aws_client("s3vectors", settings.region, settings.endpoint_url)


def _tables(settings: Settings) -> tuple[str, ...]:
    return (settings.table_name, settings.key_table_name, settings.projection_table_name)


def provision(home: Path, settings: Settings, *, restore: bool) -> bool:
    """Create tables and the tenant key; refill them from the snapshot when asked.

    True when the snapshot's projection was built by another tokenizer or impact key
    (another generation): its items are left out and the caller must rebuild the
    projection from the restored canonical state (services/reindex.py) before serving.
    """
    client = client_factory(settings)
    create_tables(client("dynamodb"), settings)
    if settings.vector_bucket and settings.vector_index:
        moto_s3vectors.ensure_index(_s3vectors_client(settings), settings.vector_bucket,
                                    settings.vector_index)
    key_id = provision_environment(client, settings, [env_names.KMS_KEY_ID])[
        env_names.KMS_KEY_ID]
    snapshot_path = home / SNAPSHOT_FILE
    rebuild = False
    if restore and snapshot_path.is_file():
        snapshot = json.loads(snapshot_path.read_text(encoding="utf-8"))
        if snapshot.get("tenant") == settings.tenant_id:
            key_id = moto_snapshot.restore_kms_key(MOTO_ACCOUNT_ID, settings.region,
                                                 snapshot["kms"], key_id)
            tables = snapshot["tables"]
            # A snapshot from before generations were recorded holds a generation-1 index.
            generation = snapshot.get("projection_generation", LEGACY_GENERATION)
            if generation != PROJECTION_GENERATION:
                tables = {name: rows for name, rows in tables.items()
                          if name != settings.projection_table_name}
                rebuild = True
            moto_snapshot.load_tables(MOTO_ACCOUNT_ID, settings.region, tables)
            moto_s3vectors.import_vectors(settings.vector_bucket, settings.vector_index,
                                          snapshot.get("vectors", []), settings.region)
    os.environ[env_names.KMS_KEY_ID] = key_id
    return rebuild


def save_snapshot(home: Path, settings: Settings) -> None:
    """Write every table item and the tenant key material to ``state.json`` (0600)."""
    snapshot = {
        "version": 1,
        "tenant": settings.tenant_id,
        "projection_generation": PROJECTION_GENERATION,
        "kms": moto_snapshot.export_kms_key(MOTO_ACCOUNT_ID, settings.region, settings.kms_key_id),
        "tables": moto_snapshot.dump_tables(MOTO_ACCOUNT_ID, settings.region, _tables(settings)),
        "vectors": moto_s3vectors.export_vectors(settings.vector_bucket, settings.vector_index,
                                                 settings.region),
    }
    _write_private(home / SNAPSHOT_FILE, json.dumps(snapshot))
