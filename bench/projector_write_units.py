"""The projector's DynamoDB write and read units per admitted record and per forget.

Run: ``.venv/bin/python bench/projector_write_units.py [--sizes 1000,10000,50000]
[--records 50] [--forgets 20] [--top 8]`` — against whichever ``engram_memory`` is on
the path (it runs unchanged on the per-posting layout before issue 33 and on the packed
posting blocks), so one command measures "before" and "after" (issue 33 item 3).

Per size N: the projection holds N records (synthetic Zipf records, ``search_scale.Corpus``,
loaded with ``DynamoProjectionStore.bulk_load``), then ``--records`` new records are
indexed one by one with exactly the projection calls the projector makes for an admitted
record (``services/projection.py``: ``document`` then ``index_at_once``, or when that
answers False ``put_postings`` + ``commit_indexed``), and ``--forgets`` of them are removed
as the projector removes a forgotten record (``document``, ``document_terms``,
``delete_postings``, ``commit_removed``, ``delete_document_terms``). The projector's
main-table calls (reading the record item, marking the invalidation complete) are the
same in both layouts and are not counted.

Units are **computed from item sizes** (moto's ``ConsumedCapacity`` is not DynamoDB's), by
DynamoDB's documented rules: an item's size is its attribute names plus values (S: UTF-8
bytes, B: bytes, N: one byte per two significant digits plus one); a write costs
ceil(size / 1 KB) units per item, where the size is the larger of the item before and
after (Put and Update; a Delete: the item deleted), at least 1; in ``TransactWriteItems``
each item costs twice that; a strongly consistent read costs ceil(size / 4 KB) per item of
the whole item (a projection expression does not make it cheaper), at least 1 also for a
key with no item; eventually consistent reads half that. Each item's size before and after
a call is read with a client of its own (no hook), so nothing is estimated from the request.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from search_scale import BASE_ENV, VALID_T, BulkWriter, Corpus, item_size, value_size

WRITE_KB = 1024
READ_KB = 4096
TRANSACTION_FACTOR = 2


def write_units(before: int, after: int, transactional: bool) -> int:
    """Units of one item write whose item was ``before`` bytes and is ``after`` bytes."""
    units = max(1, math.ceil(max(before, after) / WRITE_KB))
    return TRANSACTION_FACTOR * units if transactional else units


def read_units(size: int, consistent: bool) -> float:
    """Units of reading one item of ``size`` bytes (0: a key with no item)."""
    units = max(1, math.ceil(size / READ_KB))
    return float(units) if consistent else units / 2


def _key(table: str, item_or_key: dict[str, Any]) -> tuple[str, str, str]:
    return table, item_or_key["pk"]["S"], item_or_key["sk"]["S"]


@dataclass(frozen=True, slots=True)
class BlockWrite:
    """One write of a posting item (a block, or a single posting before issue 33)."""

    pk: str
    sk: str
    size: int
    units: int


@dataclass
class Tally:
    """What one measured operation (an admission or a forget) cost."""

    write_units: int = 0
    read_units: float = 0.0
    calls: int = 0
    cancelled: int = 0
    by_kind: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    read_by_kind: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    posts: list[BlockWrite] = field(default_factory=list)


class UnitMeter:
    """Hooks a client; computes the units of every call made while ``measure`` runs."""

    def __init__(self, client: Any, plain: Any) -> None:
        self._plain = plain
        self._tally: Tally | None = None
        self._pending: list[tuple[tuple[str, str, str], int, bool]] = []
        self._queries = threading.local()  # a change's block reads run on a thread pool
        self._lock = threading.Lock()
        events = client.meta.events
        events.register("before-parameter-build.dynamodb.*", self._before)
        events.register("after-call.dynamodb.*", self._after)

    @contextmanager
    def measure(self) -> Iterator[Tally]:
        """Count the calls of the block into a fresh tally."""
        self._tally = Tally()
        try:
            yield self._tally
        finally:
            self._tally = None

    def _item(self, key: tuple[str, str, str]) -> dict[str, Any] | None:
        table, pk, sk = key
        found = self._plain.get_item(TableName=table, ConsistentRead=True,
                                     Key={"pk": {"S": pk}, "sk": {"S": sk}})
        item: dict[str, Any] | None = found.get("Item")
        return item

    def _writes(self, operation: str, params: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """(table, key) of every item a write call changes."""
        if operation in ("PutItem",):
            return [(params["TableName"], params["Item"])]
        if operation in ("UpdateItem", "DeleteItem"):
            return [(params["TableName"], params["Key"])]
        if operation == "BatchWriteItem":
            return [(table, r["PutRequest"]["Item"] if "PutRequest" in r
                     else r["DeleteRequest"]["Key"])
                    for table, requests in params["RequestItems"].items() for r in requests]
        if operation == "TransactWriteItems":
            found = []
            for action in params["TransactItems"]:
                (kind, spec), = action.items()
                found.append((spec["TableName"], spec["Item"] if kind == "Put" else spec["Key"]))
            return found
        return []

    def _before(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        tally = self._tally
        if tally is None:
            return
        tally.calls += 1
        operation = model.name
        reads = ([(params["TableName"], params["Key"], params)] if operation == "GetItem" else
                 [(table, key, spec) for table, spec in params["RequestItems"].items()
                  for key in spec["Keys"]] if operation == "BatchGetItem" else [])
        for table, key, spec in reads:
            units = read_units(item_size(self._item(_key(table, key))),
                               bool(spec.get("ConsistentRead")))
            tally.read_units += units
            tally.read_by_kind[key["pk"]["S"].split("#", 1)[0]] += units
        if operation == "Query":
            self._queries.params = (params["TableName"], bool(params.get("ConsistentRead")),
                                    params["ExpressionAttributeValues"][":pk"])
            return
        transactional = operation == "TransactWriteItems"
        self._pending = [(key, item_size(self._item(key)), transactional)
                         for key in (_key(t, k) for t, k in self._writes(operation, params))]

    def _after(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        tally = self._tally
        if tally is None:
            return
        pending, self._pending = self._pending, []
        if model.name == "Query":  # a change's two nearest blocks: whole items, 4 KB units
            table, consistent, pk = self._queries.params
            found = [item_size(self._item(_key(table, {**i, "pk": pk})))
                     for i in parsed.get("Items", [])]
            units = read_units(sum(found), consistent) if found else read_units(1, consistent)
            with self._lock:
                tally.read_units += units
                tally.read_by_kind["POST"] += units
            return
        if "Error" in parsed:
            # A cancelled transaction or a failed condition: count it, charge nothing (none
            # is expected with one writer; the table shows how many there were).
            tally.cancelled += 1
            return
        for key, before, transactional in pending:
            after = item_size(self._item(key))
            units = write_units(before, after, transactional)
            tally.write_units += units
            kind = key[1].split("#", 1)[0]
            tally.by_kind[kind] += units
            if kind == "POST":
                tally.posts.append(BlockWrite(key[1], key[2], max(before, after), units))


@dataclass
class Measured:
    """The tallies of one size."""

    size: int
    admissions: list[Tally]
    forgets: list[Tally]

    @property
    def blocks(self) -> list[BlockWrite]:
        """Every posting-item write of the size's admissions and forgets."""
        return [w for t in self.admissions + self.forgets for w in t.posts]


def analyzed_records(corpus: Corpus, start: int, stop: int,
                     scope: Any) -> list[tuple[Any, str]]:
    """(AnalyzedDocument, record digest) of corpus records ``start..stop-1``, as the
    projector analyzes them."""
    from engram_memory.domain.ranking import analyze
    from engram_memory.domain.records import build_record, record_digest_for
    from engram_memory.domain.search_fields import record_document

    found = []
    for i in range(start, stop):
        effective = corpus.payload(i)
        record = build_record(record_digest_for(scope, effective), effective,
                              trust_class="asserted", recorded_at_ms=VALID_T)
        found.append((analyze(record_document(record.record_id, record.view)),
                      record.record_digest))
    return found


def admit(store: Any, scope: Any, analyzed: Any, digest: str) -> None:
    """The projection calls of ``ProjectionService._settle`` for an admitted record."""
    document = store.document(scope, analyzed.record_id)
    if document is not None and document.indexed:
        raise SystemExit(f"{analyzed.record_id} is already indexed")
    if store.index_at_once(scope, analyzed, digest):
        return
    chunks = store.put_postings(scope, analyzed)
    store.commit_indexed(scope, analyzed, digest, chunks)


def forget(store: Any, scope: Any, record_id: str) -> None:
    """The projection calls of ``ProjectionService._remove`` for a forgotten record."""
    document = store.document(scope, record_id)
    if document is None or not document.indexed:
        raise SystemExit(f"{record_id} is not indexed")
    refs = store.document_terms(scope, record_id)
    store.delete_postings(scope, record_id, refs)
    store.commit_removed(scope, document)
    store.delete_document_terms(scope, record_id)


def layout() -> str:
    """Which posting layout the imported package writes."""
    try:
        from engram_memory.domain import posting_blocks
    except ImportError:
        return "one item per posting (before issue 33)"
    if hasattr(posting_blocks, "SPACING"):
        return (f"packed posting blocks of hashed record-id runs, BANDS={posting_blocks.BANDS}, "
                f"SPACING={posting_blocks.SPACING}")
    return (f"packed posting blocks, BANDS={posting_blocks.BANDS}, "
            f"SHARDS={getattr(posting_blocks, 'SHARDS', '?')}")


def mean_max(values: list[float], digits: int = 1) -> str:
    """``mean (max m)`` of a column."""
    return f"{statistics.mean(values):.{digits}f} (max {max(values):.{digits}f})"


def print_table(label: str, rows: list[Measured]) -> None:
    """One row per size: units and calls per admitted record and per forget."""
    headers = ["layout", "records", "WCU/record", "WCU/record p50", "RCU/record",
               "calls/record", "WCU/forget", "RCU/forget", "calls/forget", "cancelled"]
    print("| " + " | ".join(headers) + " |")
    print("|" + "---|" * len(headers))
    for m in rows:
        admitted = [float(t.write_units) for t in m.admissions]
        forgot = [float(t.write_units) for t in m.forgets]
        cancelled = sum(t.cancelled for t in m.admissions + m.forgets)
        print("| " + " | ".join([
            label, f"{m.size}", mean_max(admitted), f"{statistics.median(admitted):.0f}",
            mean_max([t.read_units for t in m.admissions]),
            mean_max([float(t.calls) for t in m.admissions]),
            mean_max(forgot), mean_max([t.read_units for t in m.forgets]),
            mean_max([float(t.calls) for t in m.forgets]), f"{cancelled}"]) + " |")


def print_breakdown(rows: list[Measured]) -> None:
    """Mean WCU per admitted record and per forget by item kind (key prefix)."""
    print("\nWCU by item kind (mean per admitted record / per forget):")
    for m in rows:
        kinds = sorted({k for t in m.admissions + m.forgets for k in t.by_kind})
        parts = [f"{k} {statistics.mean(t.by_kind.get(k, 0) for t in m.admissions):.1f}"
                 f" / {statistics.mean(t.by_kind.get(k, 0) for t in m.forgets):.1f}"
                 for k in kinds]
        print(f"  {m.size}: " + ", ".join(parts))


def print_blocks(m: Measured, corpus: Corpus, dfs: dict[str, int], prefix: str,
                 top: int) -> None:
    """The posting items whose writes cost the most at this size, grouped by term."""
    by_term: dict[str, list[BlockWrite]] = defaultdict(list)
    for write in m.blocks:
        by_term[write.pk.removeprefix(prefix)].append(write)
    total = sum(w.units for w in m.blocks) or 1
    from engram_memory.domain.tokenizer import tokenize

    ranks: dict[str, int] = {}
    for rank, word in enumerate(corpus.words):
        for term in tokenize(word):
            ranks.setdefault(term, rank)
    print(f"\nPosting-item writes at {m.size} records, by term (top {top} of "
          f"{len(by_term)} terms by WCU; all posting writes: {total} WCU over "
          f"{len(m.admissions)} admissions + {len(m.forgets)} forgets):")
    print("| term | Zipf rank | df | writes | largest item KB | WCU | share |")
    print("|---|---|---|---|---|---|---|")
    ordered = sorted(by_term.items(), key=lambda kv: -sum(w.units for w in kv[1]))
    for term, writes in ordered[:top]:
        units = sum(w.units for w in writes)
        zipf = ranks.get(term)
        print(f"| {term} | {zipf if zipf is not None else '-'} | {dfs.get(term, 0)} | "
              f"{len(writes)} | {max(w.size for w in writes) / 1024:.1f} | {units} | "
              f"{100 * units / total:.0f}% |")


def posting_items(backend_table: Any, prefix: str) -> list[tuple[int, str, str]]:
    """(size, term, sort key) of every posting item in the table, largest first."""
    sizes: list[tuple[int, str, str]] = []
    for hash_key, by_range in backend_table.items.items():
        pk = str(hash_key.value)
        if not pk.startswith(prefix):
            continue
        for range_key, item in by_range.items():
            size = sum(len(name.encode("utf-8")) + _stored_size(value)
                       for name, value in item.attrs.items())
            sizes.append((size, pk.removeprefix(prefix), str(range_key.value)))
    sizes.sort(reverse=True)
    return sizes


def table_blocks(sizes: list[tuple[int, str, str]], top: int) -> None:
    """How big the table's posting items are (the largest ones by term)."""
    if not sizes:
        return
    over = {kb: sum(1 for s, _, _ in sizes if s > kb * 1024) for kb in (1, 4, 16, 64)}
    print(f"\nposting items in the table: {len(sizes)}; median {sizes[len(sizes) // 2][0]} B; "
          + ", ".join(f">{kb} KB: {n}" for kb, n in over.items())
          + "; largest: " + ", ".join(f"{t} {sk[:8]} {s / 1024:.1f} KB"
                                      for s, t, sk in sizes[:top]))


def _stored_size(value: Any) -> int:
    """Size of a value as moto stores it (binary may be kept base64-encoded)."""
    import base64

    if value.type == "B":
        raw = value.value
        return len(base64.b64decode(raw) if isinstance(raw, str) else raw)
    return value_size({value.type: value.value}) if value.type in ("S", "N") else value.size()


def main() -> None:
    """Load each size, admit and forget records, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--records", type=int, default=50, help="admitted per size")
    parser.add_argument("--forgets", type=int, default=20, help="of those, forgotten")
    parser.add_argument("--top", type=int, default=8, help="terms listed per size (0: none)")
    parser.add_argument("--label", default="", help="the layout's name in the table")
    parser.add_argument("--spacing", type=int, default=0,
                        help="measure another block spacing than the shipped one (posting_blocks."
                             "SPACING; the layout a generation of that spacing would write)")
    args = parser.parse_args()
    if args.spacing:
        from engram_memory.domain import posting_blocks

        posting_blocks.SPACING = args.spacing
    sizes = sorted(int(s) for s in args.sizes.split(","))
    os.environ.update(BASE_ENV)

    import boto3
    import engram_memory
    from engram_memory.local.moto_dynamodb import prepare_moto_dynamodb
    from moto import mock_aws

    label = args.label or ("new" if "blocks" in layout() else "old")
    print(f"{label}: {layout()}; package {Path(engram_memory.__file__).parent}", flush=True)
    prepare_moto_dynamodb()
    with mock_aws():
        from engram_memory import bootstrap
        from engram_memory.adapters.dynamodb.projection_store import (
            DynamoProjectionStore,
            space,
        )
        from engram_memory.domain.context import Scope
        from engram_memory.local.provisioning import create_tables
        from moto.core.models import DEFAULT_ACCOUNT_ID
        from moto.dynamodb.models import dynamodb_backends

        bootstrap.reset()
        settings = bootstrap.settings()
        table = settings.projection_table_name
        plain = boto3.client("dynamodb", region_name="us-east-1")
        create_tables(plain, settings)
        measured_client = boto3.client("dynamodb", region_name="us-east-1")
        meter = UnitMeter(measured_client, plain)
        loader = DynamoProjectionStore(BulkWriter(plain), table)
        store = DynamoProjectionStore(measured_client, table)
        scope = Scope(settings.tenant_id, "main")
        prefix = f"POST#{space(scope)}#"
        backend_table = dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].tables[table]
        corpus = Corpus()
        made = indexed = 0
        rows: list[Measured] = []
        for size in sizes:
            started = time.perf_counter()
            batch = analyzed_records(corpus, made, made + max(0, size - indexed), scope)
            made += len(batch)
            loader.bulk_load(scope, batch)
            indexed += len(batch)
            load_s = time.perf_counter() - started
            fresh = analyzed_records(corpus, made, made + args.records, scope)
            made += len(fresh)
            admissions = []
            for analyzed, digest in fresh:
                with meter.measure() as tally:
                    admit(store, scope, analyzed, digest)
                admissions.append(tally)
            step = max(1, len(fresh) // max(1, args.forgets))
            forgets = []
            for analyzed, _ in fresh[::step][:args.forgets]:
                with meter.measure() as tally:
                    forget(store, scope, analyzed.record_id)
                forgets.append(tally)
            indexed += len(fresh) - len(forgets)
            m = Measured(size, admissions, forgets)
            rows.append(m)
            terms = {w.pk.removeprefix(prefix) for w in m.blocks}
            dfs: dict[str, int] = {}
            for term in terms:
                item = plain.get_item(TableName=table, Key={
                    "pk": {"S": f"DF#{space(scope)}#{term}"}, "sk": {"S": "DF"}}).get("Item")
                dfs[term] = int(item["df"]["N"]) if item else 0
            print(f"... {size} records: loaded in {load_s:.0f} s", flush=True)
            if args.top > 0:
                print_blocks(m, corpus, dfs, prefix, args.top)
                table_blocks(posting_items(backend_table, prefix), args.top)
                print(flush=True)
        print_table(label, rows)
        print_breakdown(rows)


if __name__ == "__main__":
    main()
