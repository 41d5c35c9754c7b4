"""Deployed tables after a tokenizer change: the new generation is rebuilt from canonical
state (``engram-memory reindex``), the old generation's items are never read and can go."""

from __future__ import annotations

from typing import Any

from engram_memory import bootstrap
from engram_memory.adapters.dynamodb.projection_generations import (
    LEGACY_GENERATION,
    delete_other_generations,
    generation_of,
)
from engram_memory.composition import projection as projection_root
from engram_memory.domain.ranking import PROJECTION_GENERATION

from tests.integration.read_path.conftest import ReadPath, ids


def _projection(read_path: ReadPath) -> list[dict[str, Any]]:
    return read_path.aws.scan(read_path.aws.settings.projection_table_name)


def _downgrade_to_generation_one(read_path: ReadPath) -> None:
    """Leave the projection as the previous release wrote it: keys without a generation."""
    table = read_path.aws.settings.projection_table_name
    for item in _projection(read_path):
        read_path.aws.dynamodb.delete_item(TableName=table, Key={"pk": item["pk"],
                                                                 "sk": item["sk"]})
        legacy = item["pk"]["S"].replace(f"#{PROJECTION_GENERATION}", "")
        read_path.aws.dynamodb.put_item(TableName=table, Item={**item, "pk": {"S": legacy}})


def _scores(envelope: dict[str, Any]) -> list[tuple[str, float]]:
    return [(p["record"]["record_id"], p["score"]) for p in envelope["output"]["value"]["records"]]


def test_reindex_rebuilds_the_current_generation_and_drops_the_old_one(
    read_path: ReadPath,
) -> None:
    deploys = read_path.admit("Deployments are retried twice before paging anyone.")
    backups = read_path.admit("Nightly backups are deployed to the cold tier.")
    forgotten = read_path.admit("The deploy freeze starts on Fridays.")
    read_path.project()
    read_path.forget(forgotten)
    read_path.project()
    before = _scores(read_path.search("deploying retries"))
    assert before[0][0] == deploys
    assert forgotten not in [rid for rid, _ in before]

    _downgrade_to_generation_one(read_path)
    assert {generation_of(i["pk"]["S"]) for i in _projection(read_path)} == {LEGACY_GENERATION}

    assert projection_root.rebuild().run() == [f"{read_path.aws.settings.tenant_id}#ws-main"]
    # Exactly what the projector had built: same records, same scores, same order.
    assert _scores(read_path.search("deploying retries")) == before
    assert ids(read_path.search("backup")) == [backups]

    # Safe to run again (e.g. after an interruption): nothing is counted twice.
    projection_root.rebuild().run()
    assert _scores(read_path.search("deploying retries")) == before

    dropped = delete_other_generations(bootstrap.dynamodb_client(),
                                       read_path.aws.settings.projection_table_name)
    assert dropped > 0
    assert {generation_of(i["pk"]["S"]) for i in _projection(read_path)} == {
        PROJECTION_GENERATION}
    assert _scores(read_path.search("deploying retries")) == before
