"""A commit that loses the journal head to another writer rebuilds on the winner's head.

DynamoDB hands back the head item with the cancellation (ALL_OLD on the head element's
failed condition), so the loser neither reads the head again nor waits.
"""

from __future__ import annotations

from typing import Any

from engram_memory import bootstrap
from engram_memory.domain.journal import verify_chain

from tests.integration.conftest import AwsEnv
from tests.integration.write_path.support import SCOPE, capture

# The head is read alone (GetItem) or with the idempotency item (BatchGetItem).
HEAD_READS = ("before-parameter-build.dynamodb.GetItem",
              "before-parameter-build.dynamodb.BatchGetItem")
COMMITS = "before-call.dynamodb.TransactWriteItems"


def test_a_capture_overtaken_at_commit_time_commits_on_the_winners_head(aws: AwsEnv) -> None:
    capture(text="Warm-up note so the journal head exists.", key="head-race-warmup-0001")
    client = bootstrap.dynamodb_client()
    head_reads: list[str] = []
    overtaken: list[str] = []

    def count_head_reads(params: dict[str, Any], **_: Any) -> None:
        keys = [params["Key"]] if "Key" in params else [
            key for table in params["RequestItems"].values() for key in table["Keys"]]
        head_reads.extend(key["pk"]["S"] for key in keys if key["sk"]["S"] == "HEAD")

    def overtake(**_: Any) -> None:
        if not overtaken:  # another writer commits first, between read and commit
            overtaken.append("yes")
            overtaken.append(str(capture(text="The overtaking note.",
                                         key="head-race-winner-0001")["candidate_id"]))

    client.meta.events.register(COMMITS, overtake, unique_id="overtake")
    for event in HEAD_READS:
        client.meta.events.register(event, count_head_reads, unique_id=f"head-reads-{event}")
    try:
        loser = capture(text="The overtaken note.", key="head-race-loser-0001")
    finally:
        client.meta.events.unregister(COMMITS, unique_id="overtake")
        for event in HEAD_READS:
            client.meta.events.unregister(event, unique_id=f"head-reads-{event}")

    events = bootstrap.store().journal_events(SCOPE)
    verify_chain(events)
    order = [e.body["subject"]["candidate_id"] for e in events]
    assert order[-2:] == [overtaken[1], loser["candidate_id"]]
    # One head read by the winner, one by the loser before its first commit; none after.
    assert len(head_reads) == 2
