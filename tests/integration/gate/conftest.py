"""A real moto server with Step Functions execution on, shared by the gate tests.

The workflow's DynamoDB and SQS integrations call back to ``localhost:$MOTO_PORT``, so
these tests use a ThreadedMotoServer on a free 127.0.0.1 port (module-scoped: starting it
costs more than the tests). The tenant's tables, KMS key, confirmation queue and state
machine (with its DLQ, host event bus, log group and role) are created from the template
through the very provisioning code the local service uses, and the
local queue pump runs in a thread, feeding the real queue-consumer code.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
import requests
from engram_memory import bootstrap
from engram_memory.local.moto_server import start_moto
from engram_memory.local.provisioning import (
    create_tables,
    provision_environment,
    provisioned_variables,
)
from engram_memory.local.queue_pump import run_queue_pump
from engram_memory.settings import Settings

from tests.integration.conftest import BASE_ENV, REGION, _serialized_dynamodb
from tests.support.host_tokens import (
    generate_host_key,
    mint_agent_token,
    mint_maintainer_token,
    public_pem,
)

# Long enough for an approved call's few steps under a loaded CI box (at 3 s a test's
# approved forget after a DIGEST_CONFLICT once found the window closed), short enough for
# the tests that wait for it to close.
WINDOW_SECONDS = 10
ISSUER = "https://host.example.test"
AUDIENCE = "engram-memory-gate-tests"
_HOST_KEY = generate_host_key()


@dataclass
class GateEnv:
    """Handles on the moto server the gate tests share."""

    url: str
    settings: Settings
    dynamodb: Any
    stepfunctions: Any
    sqs: Any

    def confirmation_item(self, workspace_id: str, ref: str) -> dict[str, Any] | None:
        """The raw confirmation item, if any."""
        response = self.dynamodb.get_item(
            TableName=self.settings.table_name, ConsistentRead=True,
            Key={"pk": {"S": f"CONF#{self.settings.tenant_id}#{workspace_id}"},
                 "sk": {"S": f"REF#{ref}"}},
        )
        item: dict[str, Any] | None = response.get("Item")
        return item

    def wait_for_state(self, workspace_id: str, ref: str, state: str, timeout_s: float = 30.0
                       ) -> dict[str, Any]:
        """Poll the item until it reaches ``state`` (the workflow runs asynchronously)."""
        deadline = time.monotonic() + timeout_s
        item = self.confirmation_item(workspace_id, ref)
        while time.monotonic() < deadline:
            if item is not None and item["state"]["S"] == state:
                return item
            time.sleep(0.1)
            item = self.confirmation_item(workspace_id, ref)
        raise AssertionError(f"confirmation never reached {state}: {item and item['state']}")

    def maintainer_token(self, **overrides: Any) -> str:
        """A host-operator token (``perm`` read + maintain) for this deployment."""
        claims: dict[str, Any] = {"issuer": ISSUER, "audience": AUDIENCE,
                                  "tenant": self.settings.tenant_id, "now": time.time()}
        if "workspaces" not in overrides:
            claims["tenant_wide"] = True
        claims.update(overrides)
        return mint_maintainer_token(_HOST_KEY, **claims)

    def agent_token(self, workspace: str, **overrides: Any) -> str:
        """An agent-path token for this deployment (all six tools granted)."""
        claims: dict[str, Any] = {
            "issuer": ISSUER, "audience": AUDIENCE, "tenant": self.settings.tenant_id,
            "workspace": workspace, "purpose_ref": "purpose:engineering-notes",
            "capabilities": ["search", "get", "capture", "request_admission", "withdraw",
                             "forget"],
            "now": time.time(),
        }
        claims.update(overrides)
        return mint_agent_token(_HOST_KEY, **claims)


def _reset_wiring() -> None:
    bootstrap.reset()


@pytest.fixture(scope="module")
def gate_env() -> Iterator[GateEnv]:
    """Server + provisioned tenant + gate resources + queue pump, for one test module."""
    patch = pytest.MonkeyPatch()
    # One DynamoDB request at a time, as the mock_aws tiers do: the test's calls, the queue
    # pump and the workflow's integrations reach this server at once, and unserialized moto
    # can fail a transaction with a 500 (an admission's MUTATION_OUTCOME_UNKNOWN in CI).
    _serialized_dynamodb(patch)
    moto_env: dict[str, str] = {}
    # The local service's own starter: free loopback port, MOTO_PORT, execution on.
    moto = start_moto(moto_env)
    url = moto.url
    stop = threading.Event()
    pump: threading.Thread | None = None
    try:
        for name, value in {**BASE_ENV, **moto_env}.items():
            patch.setenv(name, value)
        patch.setenv("ENGRAM_CONFIRMATION_WINDOW_SECONDS", str(WINDOW_SECONDS))
        patch.setenv("ENGRAM_HOST_ISSUER", ISSUER)
        patch.setenv("ENGRAM_AUDIENCE", AUDIENCE)
        patch.setenv("ENGRAM_HOST_PUBLIC_KEY_PEM", public_pem(_HOST_KEY))
        clients = {name: boto3.client(name, region_name=REGION, endpoint_url=url)
                   for name in ("dynamodb", "kms", "stepfunctions", "sqs")}
        settings = Settings.from_env()
        create_tables(clients["dynamodb"], settings)
        # The tenant key, queue pair, host bus and state machine, as `make serve` does.
        for name, value in provision_environment(
            lambda service: boto3.client(service, region_name=REGION, endpoint_url=url),
            settings, provisioned_variables(),
        ).items():
            patch.setenv(name, value)
        settings = Settings.from_env()
        _reset_wiring()
        pump = threading.Thread(target=run_queue_pump, args=(settings, stop), daemon=True)
        pump.start()
        yield GateEnv(url=url, settings=settings, dynamodb=clients["dynamodb"],
                      stepfunctions=clients["stepfunctions"], sqs=clients["sqs"])
    finally:
        _reset_wiring()
        stop.set()
        if pump is not None:
            pump.join(timeout=10)
        # moto's backends are process-global: without a reset the next module's server would
        # inherit this module's queue (and its messages) and state machine.
        requests.post(f"{url}/moto-api/reset", timeout=10).raise_for_status()
        patch.undo()
        moto.stop()
