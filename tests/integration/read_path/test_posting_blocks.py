"""Packed posting blocks on DynamoDB (moto): what the projector writes, what a search reads.

docs/search.md, "Posting blocks": replays and reorderings of the projector's writes leave
the same bytes; two writers of one block lose nothing; a read returns ``limit`` postings
in the old key order, holding every posting of a band above the last it reached, whatever
the process remembered about earlier reads; a deleted posting is never read again.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import Any

from engram_memory.adapters.dynamodb.posting_writer import (
    PostingChange,
    PostingWriter,
    block_bytes,
)
from engram_memory.adapters.dynamodb.projection_store import DynamoProjectionStore, space
from engram_memory.domain.canonical import record_id_for
from engram_memory.domain.context import Scope
from engram_memory.domain.impact import impact_code, posting_codes, top_postings
from engram_memory.domain.posting_blocks import BlockPosting, band_of, decode, layout
from engram_memory.domain.ranking import AnalyzedDocument, Posting

from tests.integration.conftest import AwsEnv
from tests.support.posting_blocks import postings_by_term

TENANT = "t-blocks"


def _store(aws: AwsEnv) -> DynamoProjectionStore:
    return DynamoProjectionStore(aws.dynamodb, aws.settings.projection_table_name)


def _documents(count: int, seed: int = 3) -> list[AnalyzedDocument]:
    """Records that share the term ``quokka`` with varied impact (tf and field lengths)."""
    rng = random.Random(seed)
    return [AnalyzedDocument(
        record_id_for("sha256:" + hashlib.sha256(f"{seed}-{n}".encode()).hexdigest()),
        (rng.randint(2, 40), 0, 0, rng.randint(0, 60), 3),
        {"quokka": (rng.randint(1, 6), 0, 0, rng.randint(0, 3), 0),
         f"only{n}": (1, 0, 0, 0, 0)},
    ) for n in range(count)]


def _blocks(aws: AwsEnv, scope: Scope) -> dict[tuple[str, str], bytes]:
    """Block bytes by (term, block key) of one scope, and each df counter as text."""
    prefix = f"#{space(scope)}#"
    found: dict[tuple[str, str], bytes] = {}
    for item in aws.scan(aws.settings.projection_table_name):
        pk = item["pk"]["S"]
        if prefix in pk and pk.startswith(("POST#", "DF#")):
            term = pk.split(prefix, 1)[1]
            value = (block_bytes(item) if pk.startswith("POST#")
                     else item["df"]["N"].encode())
            found[(pk.split("#", 1)[0] + ":" + term, item["sk"]["S"])] = bytes(value)
    return found


def test_replayed_and_reordered_writes_leave_identical_blocks(aws: AwsEnv) -> None:
    store = _store(aws)
    docs = _documents(60)
    in_order, shuffled = Scope(TENANT, "ws-in-order"), Scope(TENANT, "ws-shuffled")
    for doc in docs:
        store.put_postings(in_order, doc)
    for doc in docs[:10]:
        store.delete_postings(in_order, doc.record_id, list(posting_codes(doc).items()))

    rng = random.Random(11)
    replayed = docs + rng.sample(docs, 20)  # a batch delivered again, out of order
    rng.shuffle(replayed)
    for doc in replayed:
        store.put_postings(shuffled, doc)
    forgets = docs[:10] * 2
    rng.shuffle(forgets)
    for doc in forgets:
        store.delete_postings(shuffled, doc.record_id, list(posting_codes(doc).items()))

    blocks = _blocks(aws, in_order)
    assert blocks == _blocks(aws, shuffled)
    assert blocks[("DF:quokka", "DF")] == b"50"
    held = [rid for (kind, _), data in blocks.items() if kind == "POST:quokka"
            for rid in (e.posting.record_id for e in decode(data))]
    assert sorted(held) == sorted(d.record_id for d in docs[10:])
    # Exactly the blocks the layout rule gives the postings that are left (and the empty
    # heads of bands the forgets emptied: a head is never deleted).
    stored = {sk: data for (kind, sk), data in blocks.items() if kind == "POST:quokka"}
    used = {sk[:2] for sk, data in stored.items() if data}
    stored = {sk: data for sk, data in stored.items() if data or sk[:2] in used}
    codes = [(d, posting_codes(d)["quokka"]) for d in docs[10:]]
    assert stored == layout(BlockPosting(code, Posting(d.record_id, d.frequencies["quokka"],
                                                       d.lengths)) for d, code in codes)


def test_two_writers_of_one_block_both_land(aws: AwsEnv) -> None:
    scope = Scope(TENANT, "ws-race")
    client = aws.dynamodb
    table = aws.settings.projection_table_name
    first = BlockPosting(7, Posting("mem_a", (1, 0, 0, 0, 0), (4, 0, 0, 0, 0)))
    second = BlockPosting(7, Posting("mem_b", (1, 0, 0, 0, 0), (4, 0, 0, 0, 0)))
    other = PostingWriter(client, table, space(scope))
    fired: list[bool] = []

    def interleave(**_: Any) -> None:
        # After the first writer read the (empty) block, another writer fills it.
        if not fired:
            fired.append(True)
            other.apply([PostingChange("quokka", "mem_b", 7, second)])

    client.meta.events.register("before-call.dynamodb.TransactWriteItems", interleave,
                                unique_id="interleave")
    try:
        PostingWriter(client, table, space(scope), sleep=lambda _s: None).apply(
            [PostingChange("quokka", "mem_a", 7, first)])
    finally:
        client.meta.events.unregister("before-call.dynamodb.TransactWriteItems",
                                      unique_id="interleave")
    assert fired
    held = postings_by_term(aws.scan(table))["quokka"]
    assert sorted(held) == ["mem_a", "mem_b"]
    assert _blocks(aws, scope)[("DF:quokka", "DF")] == b"2"


def _ranked(postings: Sequence[Posting]) -> list[Posting]:
    """In the stored keys' order (impact code, then record id, descending)."""
    return sorted(postings, key=lambda p: (impact_code(p.tf, p.lengths), p.record_id),
                  reverse=True)


def _band_complete(read: Sequence[Posting], everything: list[Posting]) -> bool:
    """The read holds every posting of a higher impact band than the lowest it reached."""
    codes = {p.record_id: impact_code(p.tf, p.lengths) for p in everything}
    lowest = min(band_of(codes[p.record_id]) for p in read)
    return {p.record_id for p in everything if band_of(codes[p.record_id]) > lowest} <= {
        p.record_id for p in read}


def test_a_read_returns_the_best_postings_cold_warm_and_after_deletes(aws: AwsEnv) -> None:
    store = _store(aws)
    scope = Scope(TENANT, "ws-read")
    docs = _documents(400)
    store.bulk_load(scope, [(doc, "sha256:" + "0" * 64) for doc in docs])
    everything = [Posting(d.record_id, d.frequencies["quokka"], d.lengths) for d in docs]
    queries: list[int] = []
    aws.dynamodb.meta.events.register("after-call.dynamodb.Query",
                                      lambda **_: queries.append(1), unique_id="count")

    cold = store.postings(scope, "quokka", 40)
    assert len(cold) == 40
    assert len({p.record_id for p in cold}) == 40
    assert _band_complete(cold, everything)
    queries.clear()
    warm = store.postings(scope, "quokka", 40)  # one Query: the blocks the first read needed
    assert len(queries) == 1
    assert len(warm) == 40
    assert _band_complete(warm, everything)

    # The best ones are deleted (a forget): they are never read again.
    gone = {p.record_id for p in _ranked(warm)[:30]}
    for doc in docs:
        if doc.record_id in gone:
            store.delete_postings(scope, doc.record_id, list(posting_codes(doc).items()))
    left = [p for p in everything if p.record_id not in gone]
    after = store.postings(scope, "quokka", 40)
    assert len(after) == 40
    assert not {p.record_id for p in after} & gone
    assert _band_complete(after, left)
    # Every posting left, when the limit covers them all (a read keeps its read order).
    assert _ranked(store.postings(scope, "quokka", 1000)) == top_postings(left, 1000)
    aws.dynamodb.meta.events.unregister("after-call.dynamodb.Query", unique_id="count")


def test_a_read_stops_once_it_holds_enough_not_at_the_end_of_the_term(aws: AwsEnv) -> None:
    store = _store(aws)
    scope = Scope(TENANT, "ws-bounded")
    store.bulk_load(scope, [(doc, "sha256:" + "0" * 64) for doc in _documents(400)])
    read: list[int] = []

    def count(parsed: dict[str, Any], **_: Any) -> None:
        read.append(sum(len(decode(block_bytes(i))) for i in parsed.get("Items", [])))

    aws.dynamodb.meta.events.register("after-call.dynamodb.Query", count, unique_id="read")
    try:
        assert len(store.postings(scope, "quokka", 10)) == 10
    finally:
        aws.dynamodb.meta.events.unregister("after-call.dynamodb.Query", unique_id="read")
    assert 10 <= sum(read) < 400
