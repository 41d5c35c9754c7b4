"""The projection is rebuilt from the main table alone (the recovery path of docs/deploy.md)."""

from __future__ import annotations

from engram_memory.reproject import in_process_projector, record_keys, reproject

from tests.integration.read_path.conftest import ReadPath, ids


def _wipe_projection(read_path: ReadPath) -> int:
    client, table = read_path.aws.dynamodb, read_path.aws.settings.projection_table_name
    items = client.scan(TableName=table, ProjectionExpression="pk, sk")["Items"]
    for item in items:
        client.delete_item(TableName=table, Key={"pk": item["pk"], "sk": item["sk"]})
    return len(items)


def test_a_lost_projection_is_rebuilt_from_canonical_state(read_path: ReadPath) -> None:
    kept = read_path.admit("the quokka survey of rottnest island")
    forgotten = read_path.admit("a quokka census that must be forgotten")
    read_path.project()
    read_path.forget(forgotten)
    read_path.project()
    assert ids(read_path.search("quokka")) == [kept]
    assert _wipe_projection(read_path) > 0
    assert ids(read_path.search("quokka")) == []  # the outage: search has nothing

    keys = list(record_keys(read_path.aws.dynamodb, read_path.aws.settings.table_name))
    assert len(keys) == 2  # record items only: no candidates, blobs, journal, idempotency
    assert reproject(keys, in_process_projector()) == (2, 0)

    assert ids(read_path.search("quokka")) == [kept]  # forgotten stays forgotten
    assert reproject(keys, in_process_projector()) == (2, 0)  # idempotent
    assert ids(read_path.search("quokka")) == [kept]


def test_the_rebuild_can_be_limited_to_one_workspace(read_path: ReadPath) -> None:
    read_path.admit("a record in the main workspace")
    table = read_path.aws.settings.table_name
    assert len(list(record_keys(read_path.aws.dynamodb, table, workspace="ws-main"))) == 1
    assert list(record_keys(read_path.aws.dynamodb, table, workspace="elsewhere")) == []
