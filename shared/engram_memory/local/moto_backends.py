"""Where local mode reaches moto's backends: in this process, or in the moto process.

Some of what local mode needs has no moto API: the ``--data-dir`` snapshot (tables, the
tenant key's material, vectors), S3 Vectors' QueryVectors (moto lacks it), a bench's bulk
load. Those operations read or write moto's in-memory backends, so they must run in the
process that runs moto. ``InProcessBackends`` runs them here (the ``mock_aws`` test tiers,
an in-process moto server); the local service runs moto in a child process of its own
(``moto_process``) and points ``current()`` at a ``MotoBackends`` that runs them there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from engram_memory.local import moto_snapshot
from engram_memory.local.moto_server import MOTO_ACCOUNT_ID

Hit = tuple[str, float]


class MotoBackends(Protocol):
    """The operations on moto's backends local mode needs (see the module docstring)."""

    def dump_tables(self, region: str, table_names: Sequence[str]) -> dict[str, list[Any]]:
        """Every item of each table, JSON-safe."""
        ...

    def load_tables(self, region: str, dump: dict[str, list[Any]]) -> int:
        """Write dumped items back; how many."""
        ...

    def write_items(self, region: str, request_items: dict[str, list[dict[str, Any]]]) -> None:
        """A BatchWriteItem's puts and deletes, straight into the tables."""
        ...

    def export_kms_key(self, region: str, key_id: str) -> dict[str, str]:
        """The id and material of a KMS key."""
        ...

    def restore_kms_key(self, region: str, saved: dict[str, str], fresh_key_id: str) -> str:
        """Re-home the fresh key under the saved id and material; its ARN."""
        ...

    def export_vectors(self, region: str, bucket: str, index: str) -> list[Any]:
        """Every vector of an index."""
        ...

    def import_vectors(self, region: str, bucket: str, index: str, vectors: list[Any]) -> None:
        """Put a snapshot's vectors back."""
        ...

    def scope_top_k(self, region: str, bucket: str, index: str, scope_key: str,
                    vector: Sequence[float], top_k: int) -> list[Hit]:
        """Exact cosine top-k of the vectors whose ``scope`` metadata is ``scope_key``."""
        ...


class InProcessBackends:
    """The operations on the moto backends of this process."""

    def __init__(self, account_id: str = MOTO_ACCOUNT_ID) -> None:
        self._account = account_id

    def dump_tables(self, region: str, table_names: Sequence[str]) -> dict[str, list[Any]]:
        """Every item of each table, JSON-safe."""
        return moto_snapshot.dump_tables(self._account, region, table_names)

    def load_tables(self, region: str, dump: dict[str, list[Any]]) -> int:
        """Write dumped items back; how many."""
        return moto_snapshot.load_tables(self._account, region, dump)

    def write_items(self, region: str, request_items: dict[str, list[dict[str, Any]]]) -> None:
        """A BatchWriteItem's puts and deletes, straight into the tables."""
        moto_snapshot.write_items(self._account, region, request_items)

    def export_kms_key(self, region: str, key_id: str) -> dict[str, str]:
        """The id and material of a KMS key."""
        return moto_snapshot.export_kms_key(self._account, region, key_id)

    def restore_kms_key(self, region: str, saved: dict[str, str], fresh_key_id: str) -> str:
        """Re-home the fresh key under the saved id and material; its ARN."""
        return moto_snapshot.restore_kms_key(self._account, region, saved, fresh_key_id)

    def export_vectors(self, region: str, bucket: str, index: str) -> list[Any]:
        """Every vector of an index."""
        return moto_snapshot.export_vectors(self._account, region, bucket, index)

    def import_vectors(self, region: str, bucket: str, index: str, vectors: list[Any]) -> None:
        """Put a snapshot's vectors back."""
        moto_snapshot.import_vectors(self._account, region, bucket, index, vectors)

    def scope_top_k(self, region: str, bucket: str, index: str, scope_key: str,
                    vector: Sequence[float], top_k: int) -> list[Hit]:
        """Exact cosine top-k of the vectors whose ``scope`` metadata is ``scope_key``."""
        from engram_memory.adapters.vectors.exact_top_k import exact_top_k
        from engram_memory.adapters.vectors.s3_vectors import SCOPE_METADATA

        keys: list[str] = []
        vectors: list[list[float]] = []
        for item in list(moto_snapshot.stored_vectors(self._account, bucket, index,
                                                      region).values()):
            if (item.metadata or {}).get(SCOPE_METADATA) == scope_key:
                keys.append(item.key)
                vectors.append(item.data["float32"])
        return exact_top_k(vector, keys, vectors, top_k)


OPERATIONS = frozenset(name for name in vars(MotoBackends) if not name.startswith("_"))
"""The names of ``MotoBackends``' operations (what the moto process answers)."""

_current: list[MotoBackends] = [InProcessBackends()]


def current() -> MotoBackends:
    """Where this process's moto backends are reached now."""
    return _current[0]


def use(backends: MotoBackends | None) -> None:
    """Reach moto's backends through ``backends`` (None: this process's again)."""
    _current[0] = backends if backends is not None else InProcessBackends()
