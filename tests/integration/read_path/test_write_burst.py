"""Issue 26 item 3: the projector applies a burst cheaply; PROJECTION_STALE only when it is
down (moto, real handlers). The burst itself, with the projector running, is driven on the
local service: tests/e2e/test_write_burst.py.
"""

from __future__ import annotations

from engram_memory import bootstrap
from engram_memory.adapters.dynamodb.projection_store import space
from engram_memory.domain.context import Scope

from bench.aws_calls import AwsCallCounter, total
from tests.integration.read_path.conftest import ReadPath, error_code, ids
from tests.support.events import TENANT_ID, WORKSPACE_ID


def _lag(path: ReadPath) -> int:
    """Journal head minus the projection's watermark (events the projector is behind)."""
    s = path.aws.settings
    scope = Scope(TENANT_ID, WORKSPACE_ID)
    head = path.aws.dynamodb.get_item(TableName=s.table_name, ConsistentRead=True, Key={
        "pk": {"S": f"JOURNAL#{scope.key}"}, "sk": {"S": "HEAD"}}).get("Item", {})
    stats = path.aws.dynamodb.get_item(TableName=s.projection_table_name, ConsistentRead=True,
                                       Key={"pk": {"S": f"STATS#{space(scope)}"},
                                            "sk": {"S": "STATS"}}).get("Item", {})
    return int(head.get("cursor", {"N": "0"})["N"]) - int(stats.get("wm", {"N": "0"})["N"])


def _postings(path: ReadPath) -> int:
    """Postings in the scope's projection: the sum of its terms' df counters."""
    prefix = f"DF#{space(Scope(TENANT_ID, WORKSPACE_ID))}#"
    table = path.aws.settings.projection_table_name
    return sum(int(item["df"]["N"]) for item in path.aws.scan(table)
               if item["pk"]["S"].startswith(prefix))


def _note(n: int) -> str:
    return f"Burst note {n}: the kestrel{n} importer copies wiki pages into memory."


def test_the_projector_applies_a_burst_with_few_calls_per_record(read_path: ReadPath) -> None:
    # Before the batch pass: 13 DynamoDB calls per capture + admission pair (a journal read,
    # a watermark read and write per event; two reads and three writes per record).
    admitted = [read_path.admit(_note(n), decision_text=_note(n)) for n in range(20)]
    counter = AwsCallCounter().attach([bootstrap.dynamodb_client()])
    try:
        with counter.measure() as drained:
            read_path.project()
    finally:
        counter.detach()
    assert drained.calls["dynamodb.TransactWriteItems"] == 20  # one per small record
    # Each posting's two nearest blocks are read (one consistent Query, a record's all at
    # once) before they are rewritten: docs/posting-blocks.md, "Writes". Beyond that one
    # Query per posting written, at most three calls per record.
    postings = _postings(read_path)
    assert drained.calls["dynamodb.Query"] >= postings
    assert total(drained.calls) - postings <= 3 * 20, drained.calls
    assert _lag(read_path) == 0
    assert ids(read_path.search("kestrel7 importer"))[0] == admitted[7]


def test_with_the_projector_down_a_backlog_past_the_bound_is_projection_stale(
        read_path: ReadPath) -> None:
    read_path.aws.configure(ENGRAM_SEARCH_TAIL_BOUND="6")
    read_path.rewire()
    first = read_path.admit(_note(1))
    for n in range(2, 5):
        read_path.admit(_note(n))
    assert error_code(read_path.search("kestrel1")) == "PROJECTION_STALE"
    read_path.project()
    assert ids(read_path.search("kestrel1")) == [first]
