"""What every composition root shares: settings, clients, the store, test overrides.

Each function has its own composition root in ``engram_memory.composition`` (one module per
tool, plus the projector and the sweeper) that wires only its use case, so a Lambda
imports only the services and adapters its tool needs (docs/performance.md, "Cold
starts"). This module holds what they share, built lazily, once per container, on first
use; ``reset`` forgets every cached object (tests change the environment between cases)
and ``override`` lets a test replace a port (clock, gate, policy, verifier, sleep,
time_left).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import boto3
from botocore.config import Config

from engram_memory import invocation_time
from engram_memory.adapters.clock import SystemClock
from engram_memory.adapters.dynamodb import fast_items
from engram_memory.settings import Settings

if TYPE_CHECKING:
    from engram_memory.adapters.dynamodb.store import DynamoMemoryStore

# Short timeouts: a Lambda has a deadline, and a stuck call must fail retriably. A
# TransactWriteItems the SDK resent after a lost answer may meet its own idempotency item:
# the store reports that as MUTATION_OUTCOME_UNKNOWN, never as a replay (docs/write_path.md).
CLIENT_CONFIG = Config(
    connect_timeout=2,
    read_timeout=5,
    retries={"mode": "standard", "max_attempts": 3},
)

T_co = TypeVar("T_co", covariant=True)


class Factory(Protocol[T_co]):
    """A per-container factory: call it for the object, ``cache_clear`` to rebuild it."""

    def __call__(self) -> T_co: ...

    def cache_clear(self) -> None: ...

_overrides: dict[str, Any] = {}
_caches: list[Callable[[], None]] = []
# Adapters a non-AWS composition (local mode: ``engram_memory.local.adapters.install``)
# provides for the few seams where it differs from AWS. Deployed code never imports local
# mode; it only finds these here. Kept across ``reset`` (unlike a test's overrides).
_provided: dict[str, Any] = {}


def per_container(factory: Callable[[], T_co]) -> Factory[T_co]:
    """``functools.cache`` for a zero-argument factory, forgotten by ``reset``/``override``."""
    cached = cache(factory)
    _caches.append(cached.cache_clear)
    return cached


def override(**ports: Any) -> None:
    """Replace ports (``clock``, ``gate``, ``policy``, ``verifier``, ``sleep``) and re-wire."""
    _overrides.update(ports)
    _clear()


def provide(**factories: Any) -> None:
    """Register adapter factories by seam name (``adjudication_invoker``, ``vector_index``,
    ``in_process_projector``); a factory of None withdraws that seam's."""
    _provided.update(factories)
    _clear()


def provided(name: str) -> Any:
    """The factory a non-AWS composition provided for seam ``name``, or None."""
    return _provided.get(name)


def reset() -> None:
    """Forget every cached client, service and override."""
    _overrides.clear()
    _clear()


def _clear() -> None:
    for clear in _caches:
        clear()


def port(name: str, default: Any) -> Any:
    """The test override of port ``name``, else ``default``."""
    return _overrides.get(name, default)


@per_container
def settings() -> Settings:
    """Deployment settings, read once from the environment."""
    return Settings.from_env()


# DynamoDB validates every request itself; botocore's walk of each parameter's shape before
# sending cost ≈ 6.5 µs a key (≈ 1.3 ms for the 180 keys of a heavy search's completion,
# docs/performance.md). Requests are built by this code, never from caller input unchecked.
DYNAMODB_CONFIG = CLIENT_CONFIG.merge(Config(parameter_validation=False))


def client(service: str, config: Config = CLIENT_CONFIG) -> Any:
    """A new boto3 client of ``service`` for this deployment (region, endpoint, timeouts)."""
    s = settings()
    return boto3.client(service, region_name=s.region,  # type: ignore[call-overload]
                        endpoint_url=s.endpoint_url, config=config)


@per_container
def dynamodb_client() -> Any:
    """The container's DynamoDB client (its items parsed by adapters/dynamodb/fast_items.py;
    requests not validated client-side: ``DYNAMODB_CONFIG``)."""
    dynamodb = client("dynamodb", DYNAMODB_CONFIG)
    fast_items.register(dynamodb)
    return dynamodb


@per_container
def kms_client() -> Any:
    """The container's KMS client."""
    return client("kms")


@per_container
def store() -> DynamoMemoryStore:
    """The canonical store (main + key tables)."""
    # Imported here: the endpoint and gate functions share this module but not the store.
    from engram_memory.adapters.dynamodb.store import DynamoMemoryStore

    s = settings()
    return DynamoMemoryStore(dynamodb_client(), s.table_name, s.key_table_name,
                             s.ledger_table_name)


def clock() -> Any:
    """The wall clock (or a test's)."""
    return port("clock", SystemClock())


def common() -> dict[str, Any]:
    """The clock, sleep and the invocation's time left every mutation takes."""
    return {"clock": clock(), "sleep": port("sleep", time.sleep),
            "time_left": port("time_left", invocation_time.seconds_left)}


@per_container
def page_cursor_secret() -> str:
    """The page-cursor secret: from the environment, else fetched once by its ARN.

    A failed fetch raises (a contract error) and is not cached, so the next invocation
    retries it; with neither set, paging is refused as CAPABILITY_UNAVAILABLE.
    """
    s = settings()
    if s.page_cursor_secret or not s.page_cursor_secret_arn:
        return s.page_cursor_secret
    from engram_memory.adapters.secrets import SecretsManagerSecrets  # search only

    return SecretsManagerSecrets(client("secretsmanager")).secret_string(
        s.page_cursor_secret_arn)
