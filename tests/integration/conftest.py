"""Shared moto fixtures for every integration test (write path, read path, gate).

``aws``: inside ``mock_aws``, with the ``ENGRAM_*`` environment set, the tenant's tables
and KMS key (the template's key policy and rotation) created through the very provisioning
code the local service uses, and the composition root (``engram_memory.bootstrap``) reset
before and after the test.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from engram_memory import bootstrap
from engram_memory.env_names import KMS_KEY_ID
from engram_memory.local.provisioning import create_tables, provision_environment
from engram_memory.settings import Settings
from moto import mock_aws
from moto.dynamodb.responses import DynamoHandler

from tests.support.events import TENANT_ID, WORKSPACE_ID

REGION = "us-east-1"
BASE_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
    # moto's DynamoDB streams need account-id endpoints off.
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
    "POWERTOOLS_SERVICE_NAME": "engram-memory",
    "POWERTOOLS_METRICS_NAMESPACE": "EngramMemoryTest",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "ENGRAM_TENANT_ID": TENANT_ID,
    "ENGRAM_WORKSPACE_IDS": f"{WORKSPACE_ID},ws-other",
    "ENGRAM_TABLE_NAME": "engram-main",
    "ENGRAM_KEY_TABLE_NAME": "engram-keys",
    "ENGRAM_PROJECTION_TABLE_NAME": "engram-projection",
    "ENGRAM_LEDGER_TABLE_NAME": "engram-ledger",
    "ENGRAM_PAGE_CURSOR_SECRET": "test-page-cursor-secret",
    "ENGRAM_ADMISSION_MODE": "accept",
    "ENGRAM_ADMISSION_POLICY_VERSION": "1",
}


@dataclass
class AwsEnv:
    """Handles a test needs on the mocked account."""

    settings: Settings
    dynamodb: Any
    kms: Any
    monkeypatch: pytest.MonkeyPatch

    def configure(self, **env: str) -> Settings:
        """Change ``ENGRAM_*`` variables (e.g. ENGRAM_RETAIN_ALLOWED="true") and re-wire."""
        for name, value in env.items():
            self.monkeypatch.setenv(name, value)
        reset_wiring()
        self.settings = Settings.from_env()
        return self.settings

    def scan(self, table_name: str) -> list[dict[str, Any]]:
        """Every item of a table (low-level attribute-value form), all pages."""
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"TableName": table_name, "ConsistentRead": True}
        while True:
            page = self.dynamodb.scan(**kwargs)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return items
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def scan_all(self) -> dict[str, list[dict[str, Any]]]:
        """Every item of the three tenant tables, keyed by table name."""
        names = (
            self.settings.table_name,
            self.settings.key_table_name,
            self.settings.projection_table_name,
        )
        return {name: self.scan(name) for name in names}


def reset_wiring() -> None:
    """Reset every composition root (the cached settings, clients and services)."""
    bootstrap.reset()


_MOTO_DYNAMODB_LOCK = threading.RLock()


def _serialized_dynamodb(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make moto's DynamoDB serializable under threads, as DynamoDB itself is.

    moto's TransactWriteItems snapshots whole tables and restores the snapshot when a
    condition fails, which, with concurrent requests, would undo another thread's commit.
    One lock per request makes moto behave like the service for concurrency tests.
    """
    original = DynamoHandler.call_action

    def call_action(self: DynamoHandler) -> Any:
        with _MOTO_DYNAMODB_LOCK:
            return original(self)

    monkeypatch.setattr(DynamoHandler, "call_action", call_action)


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsEnv]:
    """A mocked AWS account holding one provisioned tenant; bootstrap wired against it."""
    monkeypatch.delenv("ENGRAM_AWS_ENDPOINT_URL", raising=False)
    _serialized_dynamodb(monkeypatch)
    for name, value in BASE_ENV.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        kms = boto3.client("kms", region_name=REGION)
        settings = Settings.from_env()
        created = provision_environment(
            lambda service: boto3.client(service, region_name=REGION), settings, [KMS_KEY_ID])
        monkeypatch.setenv(KMS_KEY_ID, created[KMS_KEY_ID])
        settings = Settings.from_env()
        create_tables(dynamodb, settings)
        reset_wiring()
        try:
            yield AwsEnv(settings=settings, dynamodb=dynamodb, kms=kms, monkeypatch=monkeypatch)
        finally:
            reset_wiring()
