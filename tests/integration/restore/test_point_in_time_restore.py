"""Forget survives a point-in-time restore of the main table (issue 31 item 4), on moto.

A copy of the main table taken before a forget and a withdrawal stands in for the restore
(moto's restore_table_to_point_in_time copies the table as it is now, not as it was). The
reapply tool (``engram-memory reapply-forgets``) must leave the copy with the record
forgotten and the candidate withdrawn, refuse a ledger that is missing or short with
RESTORE_REFUSED and change nothing, and change nothing on a rerun.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import pytest
from engram_memory.cli import reapply_forgets
from engram_memory.domain.context import Scope, Tool
from engram_memory.local.provisioning import stack_shapes
from engram_memory.services.reapply_forgets import SETTLE_MS

from tests.fixtures.contract_fixtures import valid_withdraw_args
from tests.integration.read_path.conftest import ReadPath, error_code, ids
from tests.support.confirmations import approved_item
from tests.support.events import PRINCIPAL

RESTORED = "engram-main-restored"
KEPT = "the quokka survey of rottnest island"
DOOMED = "a quokka census that must be forgotten"
PENDING = "a pending wombat note that will be withdrawn"


def _copy_table(read_path: ReadPath, target: str) -> None:
    """The stand-in for a PITR restore: a new table holding the main table's items now."""
    client, source = read_path.aws.dynamodb, read_path.aws.settings.table_name
    shape = stack_shapes()["tables"]["main"]
    client.create_table(TableName=target, KeySchema=shape["KeySchema"],
                        AttributeDefinitions=shape["AttributeDefinitions"],
                        BillingMode=shape["BillingMode"],
                        GlobalSecondaryIndexes=shape["GlobalSecondaryIndexes"])
    for item in read_path.aws.scan(source):
        client.put_item(TableName=target, Item=item)


def _withdraw(read_path: ReadPath, candidate_id: str) -> None:
    read_path.counter += 1
    args = valid_withdraw_args(candidate_id=candidate_id,
                               idempotency_key=f"restore-withdraw-{read_path.counter:04d}")
    ref = f"approval-w-{read_path.counter:04d}"
    s = read_path.aws.settings
    read_path.aws.dynamodb.put_item(TableName=s.table_name, Item=approved_item(
        Scope(s.tenant_id, "ws-main"), ref, Tool.WITHDRAW, args, principal=PRINCIPAL,
        now_ms=read_path.clock.now_ms()))
    envelope = read_path.call(Tool.WITHDRAW, args, confirmation_ref=ref)
    assert envelope["ok"], envelope


def _reapply(read_path: ReadPath, restore_point_ms: int, *, ledger: str | None = None,
             project: bool = False) -> int:
    s = read_path.aws.settings
    args = argparse.Namespace(
        table=RESTORED, key_table=s.key_table_name,
        ledger_table=ledger or s.ledger_table_name, restore_point=restore_point_ms,
        projector=None, in_process_projector=project)
    return reapply_forgets.run(args)


@pytest.fixture
def restored(read_path: ReadPath) -> dict[str, Any]:
    """Records and a pending candidate; the copy; then a forget and a withdrawal."""
    # The service's clock two hours past the wall clock: the ledger table (created now, by
    # moto's wall clock) covers restore points from SETTLE_MS after its creation.
    read_path.clock.now = int(time.time() * 1000) + 2 * SETTLE_MS
    kept, doomed = read_path.admit(KEPT), read_path.admit(DOOMED)
    captured = read_path.call_capture_only(PENDING)
    assert captured["ok"], captured
    candidate = captured["output"]["value"]["candidate_id"]
    read_path.project()
    restore_point = read_path.clock.now
    _copy_table(read_path, RESTORED)
    read_path.clock.now += 60_000
    read_path.forget(doomed)
    _withdraw(read_path, candidate)
    return {"kept": kept, "doomed": doomed, "candidate": candidate,
            "restore_point": restore_point}


def _item(read_path: ReadPath, table: str, sk: str) -> dict[str, Any]:
    s = read_path.aws.settings
    return dict(read_path.aws.dynamodb.get_item(TableName=table, ConsistentRead=True, Key={
        "pk": {"S": f"SCOPE#{s.tenant_id}#ws-main"}, "sk": {"S": sk}}).get("Item", {}))


def _serve_restored(read_path: ReadPath, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point the deployment at the restored table with an empty projection (the runbook)."""
    client, projection = read_path.aws.dynamodb, read_path.aws.settings.projection_table_name
    for item in read_path.aws.scan(projection):
        client.delete_item(TableName=projection, Key={"pk": item["pk"], "sk": item["sk"]})
    monkeypatch.setenv("ENGRAM_TABLE_NAME", RESTORED)
    read_path.aws.configure(ENGRAM_TABLE_NAME=RESTORED)
    read_path.rewire()


def test_the_copy_before_the_forget_holds_the_content_until_the_ledger_is_reapplied(
        read_path: ReadPath, restored: dict[str, Any],
        monkeypatch: pytest.MonkeyPatch) -> None:
    doomed = restored["doomed"]
    assert "record_json" in _item(read_path, RESTORED, f"REC#{doomed}")  # the risk itself
    _serve_restored(read_path, monkeypatch)
    assert _reapply(read_path, restored["restore_point"], project=True) == 0

    record = _item(read_path, RESTORED, f"REC#{doomed}")
    assert record["state"]["S"] == "tombstoned"
    assert "record_json" not in record
    assert DOOMED.encode() not in repr(read_path.aws.scan(RESTORED)).encode()
    assert error_code(read_path.get(doomed)) == "NOT_FOUND"
    assert ids(read_path.search("quokka")) == [restored["kept"]]
    assert read_path.get(restored["kept"])["ok"]

    candidate = _item(read_path, RESTORED, f"CAND#{restored['candidate']}")
    assert candidate["state"]["S"] == "withdrawn"
    assert not [i for i in read_path.aws.scan(RESTORED)
                if i["sk"]["S"].startswith(f"CAND#{restored['candidate']}#BLOB#")]


def test_a_rerun_changes_nothing(read_path: ReadPath, restored: dict[str, Any]) -> None:
    assert _reapply(read_path, restored["restore_point"]) == 0
    after_first = read_path.aws.scan(RESTORED)
    assert _reapply(read_path, restored["restore_point"]) == 0
    assert read_path.aws.scan(RESTORED) == after_first


def test_a_missing_ledger_is_refused_and_changes_nothing(
        read_path: ReadPath, restored: dict[str, Any],
        capsys: pytest.CaptureFixture[str]) -> None:
    before = read_path.aws.scan(RESTORED)
    assert _reapply(read_path, restored["restore_point"], ledger="no-such-ledger") == 2
    assert "RESTORE_REFUSED" in capsys.readouterr().err
    assert read_path.aws.scan(RESTORED) == before


def test_a_ledger_younger_than_the_restore_point_is_refused_and_changes_nothing(
        read_path: ReadPath, restored: dict[str, Any],
        capsys: pytest.CaptureFixture[str]) -> None:
    before = read_path.aws.scan(RESTORED)
    # A restore point before the ledger's coverage began: forgets then were not ledgered.
    too_early = int(time.time() * 1000)
    assert _reapply(read_path, too_early) == 2
    assert "RESTORE_REFUSED" in capsys.readouterr().err
    assert read_path.aws.scan(RESTORED) == before


def test_every_forget_and_withdrawal_leaves_a_content_free_ledger_entry(
        read_path: ReadPath, restored: dict[str, Any]) -> None:
    entries = read_path.aws.scan(read_path.aws.settings.ledger_table_name)
    assert sorted((e["operation"]["S"], e["target_id"]["S"]) for e in entries) == sorted([
        ("tombstone", restored["doomed"]), ("withdraw", restored["candidate"])])
    text = repr(entries)
    assert DOOMED not in text
    assert PENDING not in text
