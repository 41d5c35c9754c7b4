"""Each function's DynamoDB items lie inside its IAM partition fence, and it needs all of it.

The stack fences every main-table statement of a function with ``dynamodb:LeadingKeys``
(``infra.names.MAIN_TABLE_PARTITIONS``; tests/infra checks the template carries exactly
that). moto does not evaluate IAM, so this is what ties the fence to the code: each
function's real paths run on the mocked tenant while a botocore hook records the partition
key of every item each DynamoDB request names (every element of a transaction or batch,
and a Query's partition). In AWS a key outside the fence is AccessDenied; a family granted
but never used is privilege to remove.

host_api and confirmation_notifier reach the main table only through the confirmation
store (``CONF#`` keys, built in one place); their fences are checked on the template.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from engram_memory import bootstrap
from engram_memory.domain.context import Tool
from engram_memory.domain.instant import format_instant
from engram_memory.local.inprocess_invoker import LocalLambdaContext

from functions.expiry_sweeper.handler import lambda_handler as sweeper_handler
from infra.names import KEY_TABLE_PARTITIONS, LEDGER_TABLE_PARTITIONS, MAIN_TABLE_PARTITIONS
from tests.fixtures.contract_fixtures import PURPOSE_REF
from tests.integration.expiry.support import SCHEDULED_EVENT
from tests.integration.write_path.adjudication_support import (
    adjudicate,
    adjudication_event,
    held,
    maintainer,
)
from tests.reliability.support import (
    SEARCH_ARGS,
    World,
    capture_args,
    new_key,
    ok,
)
from tests.support.partitions import PartitionLog, families_used

HOUR_MS = 3600 * 1000
GATE_ONLY = {"host_api", "confirmation_notifier"}  # tests/integration/gate/test_gate_partitions.py
def check_fences(log: PartitionLog, *, complete: bool) -> None:
    """Every key inside its function's fences; with ``complete``, every family used."""
    for (function, table), partitions in log.touched.items():
        fence = {"main": MAIN_TABLE_PARTITIONS[function], "keys": KEY_TABLE_PARTITIONS,
                 "projection": ("*",), "ledger": LEDGER_TABLE_PARTITIONS}[table]
        used = families_used(partitions, fence)
        if complete and table == "main":
            assert used == set(fence), (function, "granted but unused:", set(fence) - used)


@pytest.fixture
def log(world: World) -> PartitionLog:
    """The partition log on the world's wired client."""
    s = world.aws.settings
    world.record("warm-up")  # builds the wired client before hooking it
    return PartitionLog({s.table_name: "main", s.key_table_name: "keys",
                         s.projection_table_name: "projection",
                         s.ledger_table_name: "ledger"}).attach(
        bootstrap.dynamodb_client())


def _expiring_capture(world: World) -> dict[str, Any]:
    args = capture_args("fence-expiring")
    args["payload"]["retention"] = {"derivative_rule": "make-ineligible",
                                    "expires_at": format_instant(world.clock.now + HOUR_MS)}
    return args


def test_every_function_touches_only_and_all_of_its_fenced_partition_families(
        world: World, log: PartitionLog) -> None:
    with log.as_function("capture"):
        expiring = ok(world.call(Tool.CAPTURE, _expiring_capture(world)))["candidate_id"]
        kept = world.capture("fence-kept")
        withdrawn = world.capture("fence-withdrawn")
    with log.as_function("request_admission"):
        world.admit(expiring)
        record = world.admit(kept)
    withdraw = {"candidate_id": withdrawn, "idempotency_key": new_key("fence-wd"),
                "reason_ref": "reason:fence"}
    ref = world.approve(Tool.WITHDRAW, withdraw)
    with log.as_function("withdraw"):
        ok(world.call(Tool.WITHDRAW, withdraw, confirmation_ref=ref))
    with log.as_function("projector"):
        assert world.project() > 0
    with log.as_function("search"):
        assert ok(world.call(Tool.SEARCH, dict(SEARCH_ARGS)))["records"]
    with log.as_function("get"):
        ok(world.call(Tool.GET, {"record_id": record, "purpose_ref": PURPOSE_REF}))
    forget = {"record_id": record, "idempotency_key": new_key("fence-fg"),
              "reason_ref": "reason:fence"}
    ref = world.approve(Tool.FORGET, forget)
    with log.as_function("forget"):
        ok(world.call(Tool.FORGET, forget, confirmation_ref=ref))
    world.clock.now += 2 * HOUR_MS
    with log.as_function("expiry_sweeper"):
        result = json.loads(json.dumps(sweeper_handler(
            SCHEDULED_EVENT, LocalLambdaContext(function_name="expiry_sweeper"))))
    assert "expired" in json.dumps(result)
    with log.as_function("projector"):
        assert world.project() > 0  # completes the forget's and the expiry's invalidation

    assert log.functions() == set(MAIN_TABLE_PARTITIONS) - GATE_ONLY
    check_fences(log, complete=True)


def test_host_adjudication_inside_request_admission_stays_inside_its_fence(
        world: World) -> None:
    candidate = held(world.aws)  # re-wires: the log hooks the client built from here on
    s = world.aws.settings
    log = PartitionLog({s.table_name: "main", s.key_table_name: "keys"}).attach(
        bootstrap.dynamodb_client())
    with log.as_function("request_admission"):
        envelope = adjudicate(adjudication_event(candidate, maintainer()))
    assert ok(envelope)["outcome"]["status"] == "accepted"
    assert log.touched[("request_admission", "main")]
    assert log.touched[("request_admission", "keys")]  # the candidate's key is shredded
    check_fences(log, complete=False)
