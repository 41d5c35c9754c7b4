"""The projection is rebuilt from the main table alone (the recovery path of docs/deploy.md)."""

from __future__ import annotations

from engram_memory.adapters.dynamodb.projection_store import space
from engram_memory.domain.context import Scope
from engram_memory.reproject import in_process_projector, projection_triggers, reproject

from tests.integration.read_path.conftest import ReadPath, ids


def _wipe_projection(read_path: ReadPath) -> int:
    client, table = read_path.aws.dynamodb, read_path.aws.settings.projection_table_name
    items = client.scan(TableName=table, ProjectionExpression="pk, sk")["Items"]
    for item in items:
        client.delete_item(TableName=table, Key={"pk": item["pk"], "sk": item["sk"]})
    return len(items)


def _watermark_and_head(read_path: ReadPath) -> tuple[int, int]:
    s = read_path.aws.settings
    scope = f"{s.tenant_id}#ws-main"
    stats = read_path.aws.dynamodb.get_item(
        TableName=s.projection_table_name, ConsistentRead=True,
        Key={"pk": {"S": f"STATS#{space(Scope(s.tenant_id, 'ws-main'))}"},
             "sk": {"S": "STATS"}}).get("Item", {})
    head = read_path.aws.dynamodb.get_item(
        TableName=s.table_name, ConsistentRead=True,
        Key={"pk": {"S": f"JOURNAL#{scope}"}, "sk": {"S": "HEAD"}})["Item"]
    cursor = int(head["cursor"]["N"])
    return int(stats["wm"]["N"]) if "wm" in stats else 0, cursor


def test_a_lost_projection_is_rebuilt_from_canonical_state(read_path: ReadPath) -> None:
    kept = read_path.admit("the quokka survey of rottnest island")
    forgotten = read_path.admit("a quokka census that must be forgotten")
    read_path.project()
    read_path.forget(forgotten)
    read_path.project()
    assert ids(read_path.search("quokka")) == [kept]
    assert _wipe_projection(read_path) > 0  # the outage: postings, stats, watermark gone
    watermark, head = _watermark_and_head(read_path)
    assert (watermark, head > 0) == (0, True)

    keys = list(projection_triggers(read_path.aws.dynamodb, read_path.aws.settings.table_name))
    # Both record items (never candidates, blobs, idempotency), then the latest event.
    assert [sk.split("#")[0] for _, sk in keys] == ["REC", "REC", "EV"]
    assert reproject(keys, in_process_projector()) == (3, 0)

    assert _watermark_and_head(read_path) == (head, head)  # no journal tail left to merge
    assert ids(read_path.search("quokka")) == [kept]  # forgotten stays forgotten
    assert ids(read_path.search("census")) == []
    assert reproject(keys, in_process_projector()) == (3, 0)  # idempotent
    assert ids(read_path.search("quokka")) == [kept]


def test_the_rebuild_can_be_limited_to_one_workspace(read_path: ReadPath) -> None:
    read_path.admit("a record in the main workspace")
    table = read_path.aws.settings.table_name
    assert len(list(projection_triggers(read_path.aws.dynamodb, table,
                                        workspace="ws-main"))) == 2  # the record, its event
    assert list(projection_triggers(read_path.aws.dynamodb, table, workspace="elsewhere")) == []
