"""During a rebuild of the current generation, searches are answered from the previous one.

Generation ``t2i2b1`` kept a term's postings in blocks of fixed record-id ranges; ``t2i2b2`` in
blocks of hashed record-id runs (same tokenizer and impact codes). After an upgrade the current
generation starts empty; until its rebuild reaches the journal head, searches read the previous
generation plus the journal tail instead of answering PROJECTION_STALE (docs/reindex.md).
"""

from __future__ import annotations

from engram_memory.adapters.dynamodb.posting_writer import block_bytes
from engram_memory.adapters.dynamodb.previous_generation import PREVIOUS_GENERATION
from engram_memory.adapters.dynamodb.projection_generations import delete_other_generations
from engram_memory.composition import projection as projection_root
from engram_memory.domain.posting_blocks import BlockPosting, band_of, decode, encode
from engram_memory.domain.ranking import PROJECTION_GENERATION

from tests.integration.read_path.conftest import ReadPath, error_code, ids
from tests.integration.read_path.test_reindex import _projection, _scores

_B1_ID_CHARACTERS = "234567abcdefghijklmnopqrstuvwxyz"


def _b1_key(entry: BlockPosting) -> str:
    """The previous layout's block of a posting: band, then the record-id range of the
    id's first two characters (1,024 ranges)."""
    body = entry.posting.record_id.removeprefix("mem_")
    first, second = (_B1_ID_CHARACTERS.index(c) for c in body[:2])
    return f"{band_of(entry.code):02d}#{first * 32 + second:04d}"


def _as_previous_generation(read_path: ReadPath) -> None:
    """Leave the projection as the previous release wrote it (blocks of fixed record-id
    ranges) and the current generation empty, as right after the upgrade."""
    table = read_path.aws.settings.projection_table_name
    client = read_path.aws.dynamodb
    previous_blocks: dict[tuple[str, str], list[BlockPosting]] = {}
    for item in _projection(read_path):
        client.delete_item(TableName=table, Key={"pk": item["pk"], "sk": item["sk"]})
        pk = item["pk"]["S"].replace(f"#{PROJECTION_GENERATION}", f"#{PREVIOUS_GENERATION}")
        if not pk.startswith("POST#"):
            client.put_item(TableName=table, Item={**item, "pk": {"S": pk}})
            continue
        for entry in decode(block_bytes(item)):
            previous_blocks.setdefault((pk, _b1_key(entry)), []).append(entry)
    for (pk, sk), entries in previous_blocks.items():
        client.put_item(TableName=table, Item={"pk": {"S": pk}, "sk": {"S": sk},
                                               "p": {"B": encode(entries)}})


def test_the_previous_generation_serves_until_the_rebuild_completes(
    read_path: ReadPath,
) -> None:
    deploys = read_path.admit("Deployments are retried twice before paging anyone.")
    read_path.admit("Nightly backups are deployed to the cold tier.")
    forgotten = read_path.admit("The deploy freeze starts on Fridays.")
    read_path.project()
    read_path.forget(forgotten)
    read_path.project()
    before = _scores(read_path.search("deploying retries"))
    assert before[0][0] == deploys

    _as_previous_generation(read_path)
    # The current generation is empty: its watermark is far behind the head.
    read_path.aws.configure(ENGRAM_SEARCH_TAIL_BOUND="2")
    read_path.rewire()
    assert _scores(read_path.search("deploying retries")) == before
    # A write after the upgrade is found through the journal tail beside the old postings.
    fresh = read_path.admit("Deploy retries back off for a minute.")
    assert fresh in ids(read_path.search("deploying retries"))
    assert forgotten not in ids(read_path.search("deploy freeze"))

    projection_root.rebuild().run()
    dropped = delete_other_generations(read_path.aws.dynamodb,
                                       read_path.aws.settings.projection_table_name)
    assert dropped > 0
    # Served by the rebuilt generation alone now.
    after = _scores(read_path.search("deploying retries"))
    assert [rid for rid, _ in after if rid != fresh] == [rid for rid, _ in before]
    assert fresh in [rid for rid, _ in after]


def test_without_a_previous_generation_a_stale_projection_is_refused(
    read_path: ReadPath,
) -> None:
    read_path.admit("Deployments are retried twice before paging anyone.")
    read_path.admit("Nightly backups are deployed to the cold tier.")
    read_path.project()
    table = read_path.aws.settings.projection_table_name
    for item in _projection(read_path):
        read_path.aws.dynamodb.delete_item(TableName=table, Key={"pk": item["pk"],
                                                                 "sk": item["sk"]})
    read_path.aws.configure(ENGRAM_SEARCH_TAIL_BOUND="2")
    read_path.rewire()
    assert error_code(read_path.search("deploying retries")) == "PROJECTION_STALE"
