"""Local service state on disk: the snapshot of memory state, and provisioning on start.

The home directory, its host key and identity file are ``engram_memory.service_home``'s
(the commands that talk to the running service read them too). Only with ``--data-dir``
is memory state snapshotted (``state.json``, 0600) on a clean stop and restored on the
next start.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engram_memory import env_names
from engram_memory.adapters.dynamodb.projection_generations import LEGACY_GENERATION
from engram_memory.domain.ranking import PROJECTION_GENERATION
from engram_memory.local import moto_backends, moto_s3vectors, moto_snapshot
from engram_memory.local.provisioning import create_tables, provision_environment
from engram_memory.service_home import write_private
from engram_memory.settings import Settings

SNAPSHOT_FILE = "state.json"


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
            backends = moto_backends.current()
            key_id = backends.restore_kms_key(settings.region, snapshot["kms"], key_id)
            tables = snapshot["tables"]
            # A snapshot from before generations were recorded holds a generation-1 index.
            generation = snapshot.get("projection_generation", LEGACY_GENERATION)
            if generation != PROJECTION_GENERATION:
                tables = {name: rows for name, rows in tables.items()
                          if name != settings.projection_table_name}
                rebuild = True
            backends.load_tables(settings.region, tables)
            backends.import_vectors(settings.region, settings.vector_bucket,
                                    settings.vector_index, snapshot.get("vectors", []))
    os.environ[env_names.KMS_KEY_ID] = key_id
    return rebuild


def save_snapshot(home: Path, settings: Settings) -> None:
    """Write every table item and the tenant key material to ``state.json`` (0600)."""
    backends = moto_backends.current()
    snapshot = {
        "version": 1,
        "tenant": settings.tenant_id,
        "projection_generation": PROJECTION_GENERATION,
        "kms": backends.export_kms_key(settings.region, settings.kms_key_id),
        "tables": backends.dump_tables(settings.region, _tables(settings)),
        "vectors": backends.export_vectors(settings.region, settings.vector_bucket,
                                           settings.vector_index),
    }
    write_private(home / SNAPSHOT_FILE, json.dumps(snapshot))
