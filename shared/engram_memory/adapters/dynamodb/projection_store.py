"""The lexical projection in its own DynamoDB table (layout: docs/search.md).

Every partition key names the projection generation ``{g}`` (tokenizer + impact key
versions, ``ranking.PROJECTION_GENERATION``) after the scope, so an index built by another
tokenizer is never read or written by this code: it is rebuilt (docs/search.md).

* postings  ``POST#{t}#{w}#{g}#{term}`` / ``{band:02d}#`` or ``{band:02d}#{record_id}``: ``p``
  (binary: a block of postings, ``domain/posting_blocks.py``)
* df        ``DF#{t}#{w}#{g}#{term}`` / ``DF``: ``df`` (number, = the term's posting count)
* doc       ``DOC#{t}#{w}#{g}`` / ``{record_id}``: ``state``, ``digest``, ``len``, ``chunks``
  (the term list's chunk count: still written for releases that find chunks by it; this one
  finds them by key prefix)
* doc terms ``DOC#{t}#{w}#{g}`` / ``{record_id}#T#{n:04d}``: ``terms`` (``term\tcode`` lines,
  sorted by term), ``f`` (the per-field term frequencies of each line, ``f0,..,f4`` lines in
  the same order) and, when the list is one chunk, ``len`` (the field lengths): what score
  completion needs of a candidate, in one small item (``completion_documents``). Lists
  written before ``f`` existed have neither; their candidates are completed from content.
* stats     ``STATS#{t}#{w}#{g}`` / ``STATS``: ``n``, ``l0``..``l4`` (numbers, atomic ADD), ``wm``
  (the watermark: every journal event up to this cursor is applied; only ever raised)

Blocks sort by impact band, then record id (domain/impact.py, domain/posting_blocks.py),
so a term's best K are its first blocks in one descending Query.
Stats change only inside the transaction that flips the doc item's state, conditioned on
the previous state, and df only with the posting it counts (posting_writer.py), so a
replayed stream record can never count a document twice.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from engram_memory.adapters.aws_errors import (
    AWS_FAILURES,
    condition_failed,
    is_cancelled,
    is_throttling,
    is_transaction_busy,
    translate,
)
from engram_memory.adapters.dynamodb.posting_writer import (
    BLOCK_ATTRIBUTE,
    VERSION_ATTRIBUTE,
    PostingChange,
    PostingWriter,
    block_bytes,
    block_item,
    df_key,
)
from engram_memory.concurrency import in_background
from engram_memory.domain.errors import RateLimited, StoreUnavailable
from engram_memory.domain.impact import posting_codes
from engram_memory.domain.posting_blocks import (
    SPACING,
    BlockPosting,
    decode,
    layout,
    posting_count,
)
from engram_memory.domain.ranking import (
    FIELDS,
    PROJECTION_GENERATION,
    AnalyzedDocument,
    CorpusStats,
    Posting,
)
from engram_memory.domain.tokenizer import MAX_QUERY_TERMS
from engram_memory.services.ports.read import IndexedDocument, PostingRef, SearchStats

if TYPE_CHECKING:
    from engram_memory.domain.context import Scope

_INDEXED = "indexed"
_REMOVED = "removed"
_CHUNK_BYTES = 300_000
_BATCH = 25
_GET_BATCH = 100
_MAX_ATTEMPTS = 8
_TRANSACTION_ACTIONS = 100
_LENGTH_ATTRS = tuple(f"l{i}" for i in range(len(FIELDS)))
_MIN_PAGE_BLOCKS = 16
_MAX_PAGE_BLOCKS = 2000
_REMEMBERED_TERMS = 20_000
_COMPLETION_ATTRIBUTES = ("sk", "terms", "f", "len")
COMPLETION_READERS = 8
"""Term-list batch reads of one completion in flight at once (800 candidates, one round trip)."""
POSTINGS_READERS = MAX_QUERY_TERMS
"""Posting Queries in flight at once, per process. A Lambda container serves one search at
a time, so every term of a query (at most MAX_QUERY_TERMS) is read in one round trip; in
the one-process local service the pool also caps what all searches together have in
flight, so one search cannot crowd out other workspaces' calls (docs/search.md)."""


def first_page(limit: int) -> int:
    """Blocks a term's first read asks for when no earlier read of it is remembered: what
    ``limit`` postings fill at ``SPACING`` per block, a quarter more (most of a frequent
    term's blocks are full; a rare term has fewer blocks than asked for anyway)."""
    return max(_MIN_PAGE_BLOCKS, min(_MAX_PAGE_BLOCKS, -(-limit * 5 // (4 * SPACING))))


def space(scope: Scope) -> str:
    """The key part naming a scope's index of this generation: ``{t}#{w}#{g}``."""
    return f"{scope.key}#{PROJECTION_GENERATION}"


def call_translated(client: Any, operation: str, **kwargs: Any) -> dict[str, Any]:
    """``client.<operation>(**kwargs)``, its failures as the projection's EngramErrors."""
    try:
        response: dict[str, Any] = getattr(client, operation)(**kwargs)
    except AWS_FAILURES as exc:
        raise translate(exc) from exc
    return response


def _csv(values: Sequence[int]) -> str:
    return ",".join(str(v) for v in values)


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(","))


def _chunks(lines: Sequence[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """Split (term line, frequency line) pairs into pieces well under the 400 KB item limit."""
    chunks: list[list[tuple[str, str]]] = [[]]
    size = 0
    for line in lines:
        cost = len(line[0].encode("utf-8")) + len(line[1]) + 2
        if size + cost > _CHUNK_BYTES and chunks[-1]:
            chunks.append([])
            size = 0
        chunks[-1].append(line)
        size += cost
    return chunks if chunks[0] else []


def _completion_document(item: dict[str, Any],
                         terms: Sequence[str]) -> AnalyzedDocument | None:
    """The query terms' frequencies and the lengths of a term list's chunk 0, or None when
    the list cannot say them (written before ``f``, or more than one chunk)."""
    if "len" not in item or "f" not in item:
        return None
    lines = item["terms"]["S"].split("\n")
    found: dict[str, tuple[int, ...]] = {}
    frequencies: list[str] | None = None
    for term in terms:
        # Lines are sorted by term and "\t" sorts below every term character (terms are
        # letters and digits, domain/tokenizer.py), so a term's line is where "term\t" goes.
        at = bisect_left(lines, term + "\t")
        if at < len(lines) and lines[at].startswith(term + "\t"):
            if frequencies is None:
                frequencies = item["f"]["S"].split("\n")
            found[term] = _ints(frequencies[at])
    return AnalyzedDocument(item["sk"]["S"].partition("#")[0], _ints(item["len"]["S"]), found)


def _additions(analyzed: AnalyzedDocument, codes: dict[str, int]) -> list[PostingChange]:
    """The document's posting of each term, as changes to their blocks."""
    return [
        PostingChange(term, analyzed.record_id, codes[term], BlockPosting(codes[term], Posting(
            analyzed.record_id, analyzed.frequencies[term], analyzed.lengths)))
        for term in sorted(codes)
    ]


def _watermark_of(stats: dict[str, Any]) -> int:
    value = stats.get("wm")
    return max(0, int(value["N"])) if value is not None else 0


def _document_of(record_id: str, item: dict[str, Any]) -> IndexedDocument:
    return IndexedDocument(
        record_id=record_id,
        indexed=item["state"]["S"] == _INDEXED,
        record_digest=item["digest"]["S"],
        lengths=_ints(item["len"]["S"]),
    )


class _BlockReader:
    """One term's blocks, read in descending key order (the paging of ``postings``)."""

    def __init__(self, store: DynamoProjectionStore, pk: str) -> None:
        self._store = store
        self._request: dict[str, Any] = {
            "TableName": store.table_name, "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": pk}}, "ScanIndexForward": False,
            # Only the block: every attribute returned costs a parse (paging needs no sk).
            "ProjectionExpression": "#p", "ExpressionAttributeNames": {"#p": BLOCK_ATTRIBUTE},
        }
        self.data: list[bytes] = []
        """The blocks read, in read order."""
        self.postings = 0
        self.blocks = 0
        self.needed = 0
        """Blocks it took to hold ``limit`` postings (all blocks read if never reached)."""
        self._reached = False
        self.more = True

    def read_page(self, blocks: int, limit: int) -> None:
        """The next ``blocks`` blocks (fewer at the end of the term or past 1 MB)."""
        page = self._store.call("query", **self._request, Limit=blocks)
        for item in page.get("Items", []):
            data = block_bytes(item)
            self.data.append(data)
            self.postings += posting_count(data)
            self.blocks += 1
            if not self._reached:
                self.needed = self.blocks
                self._reached = self.postings >= limit
        start = page.get("LastEvaluatedKey")
        self.more = start is not None
        if start is not None:
            self._request["ExclusiveStartKey"] = start

    def blocks_for(self, limit: int) -> int:
        """Blocks the next page reads: enough for ``limit`` postings at the density seen,
        at most four times what was read so far."""
        density = self.postings / self.blocks if self.blocks else 1.0
        wanted = int((limit - self.postings) / max(density, 0.25) * 1.25) + 1
        return max(_MIN_PAGE_BLOCKS, min(_MAX_PAGE_BLOCKS, 4 * self.blocks, wanted))


class DynamoProjectionStore:
    """:class:`~engram_memory.services.ports.read.ProjectionStore` on DynamoDB."""

    def __init__(self, client: Any, table_name: str,
                 generation: str = PROJECTION_GENERATION) -> None:
        self._client = client
        self._table = table_name
        self._generation = generation
        self._last_reads: dict[tuple[str, int], int] = {}

    def _space(self, scope: Scope) -> str:
        """``{t}#{w}#{g}`` of this store's generation."""
        return f"{scope.key}#{self._generation}"

    # -- reads -----------------------------------------------------------------------------

    def stats(self, scope: Scope) -> CorpusStats:
        """N and per-field length sums (zeros for an empty scope)."""
        return self.term_stats(scope, ())[0]

    def term_stats(self, scope: Scope,
                   terms: Sequence[str]) -> tuple[CorpusStats, dict[str, int]]:
        """The scope's stats and each term's df, in one BatchGetItem (≤ 99 terms)."""
        found = self.search_stats(scope, terms)
        return found.corpus, found.dfs

    def search_stats(self, scope: Scope, terms: Sequence[str]) -> SearchStats:
        """Stats, watermark and each term's df in one BatchGetItem (≤ 99 terms).

        The watermark and the stats come from the same item version, so a stale read can
        only make the journal tail longer, never skip an event.
        """
        stats_key = {"pk": {"S": f"STATS#{self._space(scope)}"}, "sk": {"S": "STATS"}}
        wanted = list(dict.fromkeys(terms))[:_GET_BATCH - 1]
        items = self._batch_get([stats_key] + [df_key(self._space(scope), t) for t in wanted])
        stats = items.get(f"STATS#{self._space(scope)}", {})
        corpus = CorpusStats(
            doc_count=max(0, int(stats.get("n", {"N": "0"})["N"])),
            length_sums=tuple(max(0, int(stats.get(a, {"N": "0"})["N"])) for a in _LENGTH_ATTRS),
        )
        dfs = {}
        for term in wanted:
            item = items.get(df_key(self._space(scope), term)["pk"]["S"])
            dfs[term] = max(0, int(item["df"]["N"])) if item and "df" in item else 0
        return SearchStats(corpus, dfs, _watermark_of(stats))

    def watermark(self, scope: Scope) -> int:
        """The scope's watermark, strongly consistent (the projector decides from it)."""
        item = self._get({"pk": {"S": f"STATS#{self._space(scope)}"}, "sk": {"S": "STATS"}}, True)
        return _watermark_of(item or {})

    def advance_watermark(self, scope: Scope, cursor: int) -> None:
        """``wm = cursor`` unless it is already there or beyond (a replay never lowers it)."""
        request = {
            "TableName": self._table,
            "Key": {"pk": {"S": f"STATS#{self._space(scope)}"}, "sk": {"S": "STATS"}},
            "UpdateExpression": "SET wm = :c",
            "ConditionExpression": "attribute_not_exists(wm) OR wm < :c",
            "ExpressionAttributeValues": {":c": {"N": str(cursor)}},
        }
        for attempt in range(_MAX_ATTEMPTS):
            try:
                self._client.update_item(**request)
                return
            except AWS_FAILURES as exc:
                if condition_failed(exc):
                    return
                if not is_transaction_busy(exc):
                    raise translate(exc) from exc
            # The stats item is inside a commit transaction right now: wait, then retry.
            time.sleep(min(0.02 * 2**attempt, 0.5))
        raise RateLimited

    def documents(self, scope: Scope, record_ids: Sequence[str]) -> dict[str, IndexedDocument]:
        """Doc items of many records (consistent BatchGetItem; absent ids are left out)."""
        found: dict[str, IndexedDocument] = {}
        ids = list(dict.fromkeys(record_ids))
        for start in range(0, len(ids), _GET_BATCH):
            keys = [{"pk": {"S": f"DOC#{self._space(scope)}"}, "sk": {"S": rid}}
                    for rid in ids[start:start + _GET_BATCH]]
            for item in self._batch_get_items(keys, consistent=True):
                document = _document_of(item["sk"]["S"], item)
                found[document.record_id] = document
        return found

    def postings(self, scope: Scope, term: str, limit: int) -> Sequence[Posting]:
        """The term's ``limit`` best postings: its blocks in descending key order (impact
        band, then record id) until at least ``limit`` postings are read, the best chosen
        as columns (``domain/posting_columns.py``; kept in read order).

        The page size is the number of blocks the last read of this term and limit needed
        to hold ``limit`` postings (remembered per process, an eighth more; a warm
        container reads a term in one round trip), else what ``limit`` postings fill at
        the blocks' mean size (``first_page``); further pages are sized from the postings
        per block seen, at most four times the blocks read so far (a term's top bands are
        sparse, its middle ones dense). Which postings
        come back depends only on how many blocks were read (docs/posting-blocks.md).
        """
        pk = f"POST#{self._space(scope)}#{term}"
        remembered = self._last_reads.get((pk, limit))
        reader = _BlockReader(self, pk)
        first = first_page(limit) if remembered is None else remembered + remembered // 8 + 1
        reader.read_page(first, limit)
        while reader.postings < limit and reader.more:
            reader.read_page(reader.blocks_for(limit), limit)
        if len(self._last_reads) >= _REMEMBERED_TERMS:
            self._last_reads.clear()
        self._last_reads[(pk, limit)] = reader.needed
        # Imported here: numpy is for search's reads, not the projector's cold start.
        from engram_memory.domain.posting_columns import decode_columns

        return decode_columns(reader.data).best(limit)

    def postings_for_terms(self, scope: Scope, terms: Sequence[str],
                           limit: int) -> dict[str, Sequence[Posting]]:
        """:meth:`postings` of every term, the Queries run concurrently (one round trip).

        Each read runs through ``in_background`` on the pool of width POSTINGS_READERS: in
        the caller's context, with its trace entity (Powertools' logger keys, the X-Ray
        trace, a bench's call attribution follow it into the pool).
        """
        futures = {
            term: in_background(partial(self.postings, scope, term, limit),
                                width=POSTINGS_READERS)
            for term in dict.fromkeys(terms)
        }
        return {term: future.result() for term, future in futures.items()}

    def document(self, scope: Scope, record_id: str) -> IndexedDocument | None:
        """The doc item (strongly consistent: the projector decides from it)."""
        item = self._get({"pk": {"S": f"DOC#{self._space(scope)}"}, "sk": {"S": record_id}}, True)
        return None if item is None else _document_of(record_id, item)

    def document_terms(self, scope: Scope, record_id: str) -> list[PostingRef]:
        """The stored (term, impact code) list of a record, every chunk found (consistent)."""
        refs: list[PostingRef] = []
        for item in self._term_list_items(scope, record_id, ("terms",)):
            if item.get("terms", {}).get("S"):
                for line in item["terms"]["S"].split("\n"):
                    term, code = line.split("\t")[:2]
                    refs.append((term, int(code)))
        return refs

    def _term_list_items(self, scope: Scope, record_id: str,
                         attributes: Sequence[str]) -> list[dict[str, Any]]:
        """Every chunk of a record's term list, found by its key prefix (not by the doc
        item's chunk count: a crashed attempt, or code cutting chunks differently, may have
        left more), read consistently."""
        names = {f"#a{n}": name for n, name in enumerate(("sk", *attributes))}
        request: dict[str, Any] = {
            "TableName": self._table, "ConsistentRead": True,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {":pk": {"S": f"DOC#{self._space(scope)}"},
                                          ":prefix": {"S": f"{record_id}#T#"}},
            "ProjectionExpression": ", ".join(names), "ExpressionAttributeNames": names,
        }
        items: list[dict[str, Any]] = []
        while True:
            page = self._call("query", **request)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return items
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def completion_documents(self, scope: Scope, record_ids: Sequence[str],
                             terms: Sequence[str], consistent: bool = False
                             ) -> dict[str, AnalyzedDocument | None]:
        """What score completion needs of each record: the given terms' per-field
        frequencies and the field lengths, from chunk 0 of its term list (one BatchGetItem
        per 100 ids, all at once). An id whose list is absent is left out; None for a list
        that cannot say (written before frequencies were stored, or several chunks)."""
        ids = list(dict.fromkeys(record_ids))
        pk = f"DOC#{self._space(scope)}"
        futures = [
            in_background(partial(self._batch_get_items, [
                {"pk": {"S": pk}, "sk": {"S": f"{rid}#T#0000"}}
                for rid in ids[start:start + _GET_BATCH]
            ], consistent, _COMPLETION_ATTRIBUTES), width=COMPLETION_READERS)
            for start in range(0, len(ids), _GET_BATCH)
        ]
        found: dict[str, AnalyzedDocument | None] = {}
        for future in futures:
            for item in future.result():
                found[item["sk"]["S"].partition("#")[0]] = _completion_document(item, terms)
        return found

    # -- writes ----------------------------------------------------------------------------

    def put_postings(self, scope: Scope, analyzed: AnalyzedDocument) -> int:
        """Write the document's postings (each with its df) and term list; chunk count.

        The term list goes first: a crash after it leaves postings findable for removal.
        """
        codes = posting_codes(analyzed)
        chunks = self._term_list_requests(scope, analyzed, codes)
        self._batch_write(chunks)
        PostingWriter(self._client, self._table, self._space(scope)).apply(
            _additions(analyzed, codes))
        return len(chunks)

    def index_at_once(self, scope: Scope, analyzed: AnalyzedDocument,
                      record_digest: str) -> bool:
        """Term list, postings with their df, doc → indexed and stats += document, all in ONE
        transaction when they fit one (≤ 100 actions: up to 48 distinct terms, most notes, fewer
        when the record starts blocks); False when they do not fit, or a condition or a conflict
        cancelled it (the doc already indexed, an orphan posting of a crashed attempt): the caller
        then takes :meth:`put_postings` + :meth:`commit_indexed`, which handle those cases. Nothing
        is half-written: the transaction commits whole or not at all."""
        codes = posting_codes(analyzed)
        chunks = self._term_list_requests(scope, analyzed, codes)
        if 2 * len(codes) + len(chunks) + 2 > _TRANSACTION_ACTIONS:
            return False
        writer = PostingWriter(self._client, self._table, self._space(scope))
        changes = _additions(analyzed, codes)
        actions: list[dict[str, Any]] = [
            {"Put": {"TableName": self._table, "Item": chunk["PutRequest"]["Item"]}}
            for chunk in chunks
        ]
        # The blocks as read now; the transaction's conditions fail if they change first.
        actions.extend(writer.plan(changes, writer.read_near(changes)))
        actions.append(self._doc_put(scope, analyzed, record_digest, len(chunks)))
        actions.append(self._stats_update(scope, 1, analyzed.lengths))
        if len(actions) > _TRANSACTION_ACTIONS:
            return False  # block splits made it too big: the two-step path takes it
        try:
            self._client.transact_write_items(TransactItems=actions)
        except AWS_FAILURES as exc:
            if is_cancelled(exc) or is_transaction_busy(exc) or is_throttling(exc):
                return False
            raise translate(exc) from exc
        return True

    def commit_indexed(self, scope: Scope, analyzed: AnalyzedDocument, record_digest: str,
                       term_chunks: int) -> bool:
        """Doc → indexed and stats += document, in one transaction; False if already indexed."""
        put = self._doc_put(scope, analyzed, record_digest, term_chunks)
        return self._transact([put, self._stats_update(scope, 1, analyzed.lengths)])

    def _doc_put(self, scope: Scope, analyzed: AnalyzedDocument, record_digest: str,
                 term_chunks: int) -> dict[str, Any]:
        """The doc item → indexed, only if absent or removed (a replay never recounts)."""
        doc = {
            "pk": {"S": f"DOC#{self._space(scope)}"},
            "sk": {"S": analyzed.record_id},
            "state": {"S": _INDEXED},
            "digest": {"S": record_digest},
            "len": {"S": _csv(analyzed.lengths)},
            "chunks": {"N": str(term_chunks)},
        }
        return {"Put": {
            "TableName": self._table,
            "Item": doc,
            "ConditionExpression": "attribute_not_exists(pk) OR #st = :removed",
            "ExpressionAttributeNames": {"#st": "state"},
            "ExpressionAttributeValues": {":removed": {"S": _REMOVED}},
        }}

    def delete_postings(self, scope: Scope, record_id: str, refs: Sequence[PostingRef]) -> None:
        """Delete the record's posting under every given (term, code); absent ones are fine."""
        PostingWriter(self._client, self._table, self._space(scope)).apply([
            PostingChange(term, record_id, code) for term, code in sorted(set(refs))
        ])

    def commit_removed(self, scope: Scope, document: IndexedDocument) -> bool:
        """Doc → removed and stats −= document, in one transaction; False if not indexed."""
        flip = {"Update": {
            "TableName": self._table,
            "Key": {"pk": {"S": f"DOC#{self._space(scope)}"}, "sk": {"S": document.record_id}},
            "UpdateExpression": "SET #st = :removed",
            "ConditionExpression": "#st = :indexed",
            "ExpressionAttributeNames": {"#st": "state"},
            "ExpressionAttributeValues": {
                ":removed": {"S": _REMOVED}, ":indexed": {"S": _INDEXED},
            },
        }}
        negative = tuple(-length for length in document.lengths)
        return self._transact([flip, self._stats_update(scope, -1, negative)])

    def delete_document_terms(self, scope: Scope, record_id: str) -> None:
        """Delete every chunk of a record's term list (found by key prefix)."""
        self._batch_write([
            {"DeleteRequest": {"Key": {"pk": {"S": f"DOC#{self._space(scope)}"},
                                       "sk": item["sk"]}}}
            for item in self._term_list_items(scope, record_id, ())
        ])

    def bulk_load(self, scope: Scope, documents: Sequence[tuple[AnalyzedDocument, str]],
                  watermark: int | None = None) -> None:
        """Index many never-indexed documents at once (rebuilds, the scale bench).

        Each term's blocks (laid out again with the postings already there, read
        consistently), term lists and doc items go out in 25-item batches; the stats and
        every term's df get one ADD for the whole set. Unlike the projector path this is not
        replay-safe and must not run beside a projector: run it only on records the
        projection has never seen. ``watermark``: the journal cursor the documents are the
        accepted_current records of.
        """
        requests: list[dict[str, Any]] = []
        sums = [0] * len(FIELDS)
        dfs: dict[str, int] = {}
        writer = PostingWriter(self._client, self._table, self._space(scope))
        added: dict[str, list[BlockPosting]] = {}
        for analyzed, record_digest in documents:
            lengths = _csv(analyzed.lengths)
            sums = [a + b for a, b in zip(sums, analyzed.lengths, strict=True)]
            codes = posting_codes(analyzed)
            for change in _additions(analyzed, codes):
                dfs[change.term] = dfs.get(change.term, 0) + 1
                if change.entry is not None:
                    added.setdefault(change.term, []).append(change.entry)
            chunks = self._term_list_requests(scope, analyzed, codes)
            requests.extend(chunks)
            requests.append({"PutRequest": {"Item": {
                "pk": {"S": f"DOC#{self._space(scope)}"}, "sk": {"S": analyzed.record_id},
                "state": {"S": _INDEXED}, "digest": {"S": record_digest},
                "len": {"S": lengths}, "chunks": {"N": str(len(chunks))},
            }}})
        for term, entries in added.items():
            pk = writer.post_key(term)
            stored = self._term_blocks(pk)
            blocks = layout([*(e for data, _ in stored.values() for e in decode(data)),
                             *entries])
            requests.extend(
                {"PutRequest": {"Item": block_item({"pk": pk, "sk": {"S": sk}}, data,
                                                   stored.get(sk, (b"", 0))[1] + 1)}}
                for sk, data in blocks.items() if sk not in stored or stored[sk][0] != data)
            requests.extend({"DeleteRequest": {"Key": {"pk": pk, "sk": {"S": sk}}}}
                            for sk in stored if sk not in blocks)
        self._batch_write(requests)
        for term, count in sorted(dfs.items()):
            self._call("update_item", TableName=self._table,
                       Key=df_key(self._space(scope), term),
                       UpdateExpression="ADD df :d",
                       ExpressionAttributeValues={":d": {"N": str(count)}})
        update = self._stats_update(scope, len(documents), sums)["Update"]
        self._call("update_item", **update)
        if watermark is not None:
            self.advance_watermark(scope, watermark)

    def _term_blocks(self, pk: dict[str, Any]) -> dict[str, tuple[bytes, int]]:
        """Every block of a term (sort key → bytes and version), read consistently."""
        request: dict[str, Any] = {
            "TableName": self._table, "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": pk}, "ConsistentRead": True,
            "ProjectionExpression": "sk, #p, #v",
            "ExpressionAttributeNames": {"#p": BLOCK_ATTRIBUTE, "#v": VERSION_ATTRIBUTE}}
        blocks: dict[str, tuple[bytes, int]] = {}
        while True:
            page = self._call("query", **request)
            blocks.update((i["sk"]["S"], (block_bytes(i), int(i[VERSION_ATTRIBUTE]["N"])))
                          for i in page["Items"])
            if "LastEvaluatedKey" not in page:
                return blocks
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _term_list_requests(self, scope: Scope, analyzed: AnalyzedDocument,
                            codes: dict[str, int]) -> list[dict[str, Any]]:
        """PutRequests of the term list (``term\tcode`` lines, their frequencies in ``f``, the
        lengths in ``len`` when it is one chunk), chunked under the item limit."""
        lines = [(f"{term}\t{codes[term]}", _csv(analyzed.frequencies[term]))
                 for term in sorted(codes)]
        chunks = _chunks(lines)
        requests = []
        for n, chunk in enumerate(chunks):
            item = {
                "pk": {"S": f"DOC#{self._space(scope)}"},
                "sk": {"S": f"{analyzed.record_id}#T#{n:04d}"},
                "terms": {"S": "\n".join(line for line, _ in chunk)},
                "f": {"S": "\n".join(frequencies for _, frequencies in chunk)},
            }
            if len(chunks) == 1:
                item["len"] = {"S": _csv(analyzed.lengths)}
            requests.append({"PutRequest": {"Item": item}})
        return requests

    # -- plumbing --------------------------------------------------------------------------

    def _stats_update(self, scope: Scope, count: int, lengths: Sequence[int]) -> dict[str, Any]:
        values = {":n": {"N": str(count)}}
        values.update({f":{a}": {"N": str(v)} for a, v in zip(_LENGTH_ATTRS, lengths, strict=True)})
        return {"Update": {
            "TableName": self._table,
            "Key": {"pk": {"S": f"STATS#{self._space(scope)}"}, "sk": {"S": "STATS"}},
            "UpdateExpression": "ADD n :n, " + ", ".join(f"{a} :{a}" for a in _LENGTH_ATTRS),
            "ExpressionAttributeValues": values,
        }}

    def _transact(self, items: list[dict[str, Any]]) -> bool:
        try:
            self._client.transact_write_items(TransactItems=items)
        except AWS_FAILURES as exc:
            if condition_failed(exc):
                return False
            raise translate(exc) from exc
        return True

    def _batch_get(self, keys: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Items by partition key (every key here has a distinct pk), unprocessed retried."""
        found: dict[str, dict[str, Any]] = {}
        pending: dict[str, Any] = {self._table: {"Keys": keys}}
        for attempt in range(_MAX_ATTEMPTS):
            response = self._call("batch_get_item", RequestItems=pending)
            for item in response.get("Responses", {}).get(self._table, []):
                found[item["pk"]["S"]] = dict(item)
            pending = response.get("UnprocessedKeys") or {}
            if not pending:
                return found
            time.sleep(min(0.05 * 2**attempt, 1.0))
        raise RateLimited

    def _batch_get_items(self, keys: list[dict[str, Any]], consistent: bool,
                         attributes: Sequence[str] = ()) -> list[dict[str, Any]]:
        """Items of up to 100 keys (any pk/sk), unprocessed keys retried; only the named
        ``attributes`` when some are given."""
        found: list[dict[str, Any]] = []
        request: dict[str, Any] = {"Keys": keys, "ConsistentRead": consistent}
        if attributes:
            names = {f"#a{n}": name for n, name in enumerate(attributes)}
            request["ProjectionExpression"] = ", ".join(names)
            request["ExpressionAttributeNames"] = names
        pending: dict[str, Any] = {self._table: request}
        for attempt in range(_MAX_ATTEMPTS):
            response = self._call("batch_get_item", RequestItems=pending)
            found.extend(dict(i) for i in response.get("Responses", {}).get(self._table, []))
            pending = response.get("UnprocessedKeys") or {}
            if not pending:
                return found
            time.sleep(min(0.05 * 2**attempt, 1.0))
        raise RateLimited

    def _get(self, key: dict[str, Any], consistent: bool) -> dict[str, Any] | None:
        response = self._call("get_item", TableName=self._table, Key=key, ConsistentRead=consistent)
        item = response.get("Item")
        return dict(item) if item else None

    def _batch_write(self, requests: list[dict[str, Any]]) -> None:
        for start in range(0, len(requests), _BATCH):
            pending: list[dict[str, Any]] = requests[start:start + _BATCH]
            for attempt in range(_MAX_ATTEMPTS):
                response = self._call("batch_write_item", RequestItems={self._table: pending})
                pending = response.get("UnprocessedItems", {}).get(self._table, [])
                if not pending:
                    break
                # Unprocessed items mean throttling: back off before resending them.
                time.sleep(min(0.05 * 2**attempt, 1.0))
            else:
                raise StoreUnavailable

    @property
    def table_name(self) -> str:
        """The projection table's name."""
        return self._table

    def call(self, operation: str, **kwargs: Any) -> dict[str, Any]:
        """``client.<operation>(**kwargs)``, failures translated."""
        return call_translated(self._client, operation, **kwargs)

    _call = call
