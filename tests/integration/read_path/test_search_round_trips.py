"""A search is a fixed, small number of sequential DynamoDB round trips, whatever its length.

Counted with the botocore call hook of bench/aws_calls.py (before-call → after-call per
call; calls in flight together are one round trip): the postings Queries of all query
terms run concurrently, so a 64-term query waits on as many round trips as a 3-term one.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from engram_memory import bootstrap
from engram_memory.domain.tokenizer import MAX_QUERY_TERMS, query_terms

from bench.aws_calls import AwsCallCounter, RoundTripRecorder, sequential_round_trips
from tests.integration.read_path.conftest import ReadPath, ids

WORDS = [f"zq{i:03d}" for i in range(80)]


Call = tuple[str, float, float]


def _search_calls(read_path: ReadPath, query: str) -> tuple[list[str], list[Call]]:
    # Simulated network time per call (GIL released): what makes concurrent calls overlap
    # as on AWS; generous, because a loaded 2-core box can be slow to schedule threads.
    recorder = RoundTripRecorder(network_latency_s=0.2).attach([bootstrap.dynamodb_client()])
    try:
        with recorder.measure() as calls:
            found = ids(read_path.search(query, limit=5))
    finally:
        recorder.detach()
    return found, calls


def test_a_64_term_query_waits_on_no_more_round_trips_than_a_3_term_one(
    read_path: ReadPath,
) -> None:
    # Three records share the vocabulary so every query term has postings to read.
    first = read_path.admit(" ".join(WORDS[:40]))
    read_path.admit(" ".join(WORDS[30:70]))
    read_path.admit(" ".join(WORDS[60:]))
    read_path.project()

    read_path.search(" ".join(WORDS[:64]))  # a warm service: its reader threads exist
    long_query = " ".join(WORDS[:64])
    assert len(query_terms(long_query)) == MAX_QUERY_TERMS  # the cap applies
    found_long, long_calls = _search_calls(read_path, long_query)
    found_short, short_calls = _search_calls(read_path, " ".join(WORDS[:3]))

    assert found_long[0] == first
    assert found_short == [first]
    # One Query per distinct term (capped), all of them in flight together.
    assert Counter(name for name, _, _ in long_calls)["Query"] == len(query_terms(long_query))
    assert sequential_round_trips(long_calls) <= 4
    assert sequential_round_trips(long_calls) == sequential_round_trips(short_calls)


def test_every_aws_call_of_a_search_is_counted_as_the_searchs_own(read_path: ReadPath) -> None:
    # The bench's counter attributes a call to a measured block through the caller's
    # context: a call run on a pool that does not carry the context goes uncounted.
    first = read_path.admit(" ".join(WORDS[:20]))
    read_path.project()
    second = read_path.admit(" ".join(WORDS[10:30]))  # in the journal tail: not projected
    client = bootstrap.dynamodb_client()
    seen: Counter[str] = Counter()  # every call, whichever thread made it

    def see(model: Any, **_: Any) -> None:
        seen[f"dynamodb.{model.name}"] += 1

    client.meta.events.register("before-call.*.*", see, unique_id="every-call")
    counter = AwsCallCounter().attach([client])
    try:
        with counter.measure() as block:
            found = ids(read_path.search(" ".join(WORDS[12:18]), limit=5))
    finally:
        counter.detach()
        client.meta.events.unregister("before-call.*.*", unique_id="every-call")
    assert set(found) == {first, second}
    # Background reads of all three kinds happened: head, postings (one per term), tail rows.
    assert block.calls["dynamodb.GetItem"] >= 1
    assert block.calls["dynamodb.Query"] >= len(query_terms(" ".join(WORDS[12:18])))
    assert block.calls["dynamodb.BatchGetItem"] >= 2
    assert block.calls == seen
