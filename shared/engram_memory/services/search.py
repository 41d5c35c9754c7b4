"""engram_memory_search: BM25F over the projection and the journal tail, then revalidation.

One search pins ``system_as_of`` (the scope's journal head, read once) and ``valid_as_of``
(the clock, read once). The head, the projection's statistics with its watermark, and the
postings of the query terms are read at the same time; the journal tail between the
watermark and the head is merged in from canonical state (services/search_tail.py,
domain/tail_merge.py), so a record is found as soon as it is accepted, projector or not.
Hits are then revalidated in rank order with consistent batch reads of the record items
until the page (and one more, to know whether more exist) is filled: only eligible records
are returned (services/eligibility.py), and the receipt counts only those. Paging, budgets
and redaction: services/paging.py, budget.py, redaction.py; the rules: docs/search.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from engram_memory.concurrency import in_background
from engram_memory.contract.inputs import SearchArgs
from engram_memory.contract.outputs import SearchValue
from engram_memory.domain.canonical import DigestKind, digest, digest_without
from engram_memory.domain.errors import (
    ProjectionStale,
    RankingUnavailable,
    StalePage,
    StoreUnavailable,
    Unauthorized,
)
from engram_memory.domain.instant import format_instant
from engram_memory.domain.ranking import DEFAULT_CONFIG, RankingConfig, ScoredRecord
from engram_memory.domain.tail_merge import TailDelta, merge_tail
from engram_memory.domain.tokenizer import query_terms
from engram_memory.services.budget import fit_prefix, fit_record, size_of
from engram_memory.services.channels import ChannelPlanner, ChannelSettings, RankingProfile
from engram_memory.services.eligibility import (
    PURPOSE_SCOPE_BOUND,
    is_eligible,
    visible_purpose,
)
from engram_memory.services.paging import PageCursorCodec, PageState, delivered_digest
from engram_memory.services.ports.semantic import SemanticChannelError
from engram_memory.services.score_completion import ScoreCompletion
from engram_memory.services.search_tail import DEFAULT_TAIL_BOUND, JournalTail

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from engram_memory.domain.context import InvocationContext, Scope
    from engram_memory.services.ports.read import ProjectionStore, RecordReader, RecordRow
    from engram_memory.services.ports.write import Clock
    from engram_memory.services.redaction import Redactor

_BATCH = 100
_PLACEHOLDER_DIGEST = "sha256:" + "0" * 64
Hit = tuple[ScoredRecord, "RecordRow"]


def request_digest(args: SearchArgs) -> str:
    """The request a page belongs to: query and every parameter but the page cursor."""
    subject = {
        "query": args.query,
        "purpose_ref": args.purpose_ref,
        "limit": args.limit,
        "max_packet_bytes": args.max_packet_bytes,
        "capability_policy": args.capability_policy.model_dump(mode="json"),
    }
    return digest(DigestKind.RANK_REQUEST, subject)


def semantic_tail(delta: TailDelta) -> dict[str, Mapping[str, Any] | None]:
    """The journal tail as the semantic channel reads it: current records (embedded at
    query time) and records no longer current (dropped even if their vector remains)."""
    tail: dict[str, Mapping[str, Any] | None] = dict.fromkeys(delta.gone)
    tail.update(delta.records)
    return tail


def rank_receipt_digest(receipt: Mapping[str, Any]) -> str:
    """Digest of a rank receipt over every field but ``receipt_digest``."""
    return digest_without(DigestKind.RANK_RECEIPT, receipt, "receipt_digest")


def response_digest(value: Mapping[str, Any]) -> str:
    """Digest of a search value over every field but ``response_digest``."""
    return digest_without(DigestKind.RESPONSE, value, "response_digest")


@dataclass(frozen=True, slots=True)
class _Pinned:
    """Everything one page is computed at."""

    scope: Scope
    request_digest: str
    system_as_of: int
    valid_as_of: str
    eligible_count: int
    offset: int
    profile: RankingProfile


class SearchService:
    """The search use case (a ToolService: ``(ctx, args) -> value``)."""

    def __init__(self, records: RecordReader, projection: ProjectionStore, clock: Clock,
                 codec: PageCursorCodec, redactor: Redactor,
                 config: RankingConfig = DEFAULT_CONFIG,
                 channels: ChannelSettings | None = None,
                 tail_bound: int = DEFAULT_TAIL_BOUND,
                 purpose_scope: str = PURPOSE_SCOPE_BOUND,
                 previous: ProjectionStore | None = None) -> None:
        self._records = records
        self._purpose_scope = purpose_scope
        self._projection = projection
        self._tail = JournalTail(records, projection, tail_bound)
        # The previous generation, while the current one is rebuilt (docs/reindex.md).
        self._previous = (None if previous is None else
                          (previous, JournalTail(records, previous, tail_bound)))
        self._clock = clock
        self._codec = codec
        self._redactor = redactor
        self._config = config
        self._channels = ChannelPlanner(config, channels or ChannelSettings())
        self._completion = ScoreCompletion(records, config)

    def execute(self, ctx: InvocationContext, args: SearchArgs) -> dict[str, Any]:
        """Run one search page."""
        use_semantic = self._check_policy(ctx, args)
        req_digest = request_digest(args)
        state = self._continuation(ctx, args, req_digest)
        system_as_of, ranked, profile = self._ranking(ctx.scope, args, use_semantic)
        if state is not None and system_as_of < state.system_as_of:
            raise StalePage  # the journal went backwards (a restore): the ordering is void
        if state is not None and state.profile_digest != profile.config_digest:
            raise StalePage  # ranked with other channels or parameters than the first page
        now_ms = self._clock.now_ms()
        offset = state.offset if state is not None else 0
        purpose = visible_purpose(ctx.purpose_ref, self._purpose_scope)
        hits = self._revalidate(ctx.scope, ranked, offset + args.limit + 1, system_as_of, now_ms,
                                purpose)
        ids = [hit[0].record_id for hit in hits]
        if state is not None and (
            len(ids) < offset or delivered_digest(ids[:offset]) != state.delivered_digest
        ):
            raise StalePage  # the pages already delivered no longer hold
        pinned = _Pinned(ctx.scope, req_digest, system_as_of, format_instant(now_ms),
                         len(hits), offset, profile)
        return self._page(pinned, hits, args)

    def _check_policy(self, ctx: InvocationContext, args: SearchArgs) -> bool:
        """Whether the semantic channel is used (services/channels.py has the rules)."""
        if args.purpose_ref != ctx.purpose_ref:
            raise Unauthorized
        return self._channels.wants_semantic(args.capability_policy)

    def _continuation(self, ctx: InvocationContext, args: SearchArgs,
                      req_digest: str) -> PageState | None:
        if args.page_cursor is None:
            return None
        state = self._codec.decode(args.page_cursor)
        if state.scope != ctx.scope.key or state.request_digest != req_digest:
            raise StalePage
        return state

    def _ranking(self, scope: Scope, args: SearchArgs, use_semantic: bool
                 ) -> tuple[int, Sequence[ScoredRecord], RankingProfile]:
        """The pinned head, the ranking and the profile it was made with (fused when the
        semantic channel is used; it reads the same journal tail as the lexical one)."""
        channel = self._channels.semantic if use_semantic else None
        # The query embedding and the vector index read run beside the lexical reads (one
        # round trip for both channels); only the journal tail's correction waits for them.
        nearest = (in_background(partial(channel.nearest, scope, args.query))
                   if channel is not None else None)
        head, lexical, delta = self._rank(scope, args.query, use_semantic)
        if channel is None or nearest is None:
            return head, lexical, self._channels.lexical_profile
        try:
            semantic = channel.with_tail(nearest.result(), semantic_tail(delta))
            profile = self._channels.fused_profile()
        except SemanticChannelError:
            if args.capability_policy.minimum_channels == "lexical_and_semantic":
                raise RankingUnavailable from None  # required: never a lexical fallback
            return head, lexical, self._channels.lexical_profile
        return head, self._channels.fuse(lexical, semantic), profile

    def _rank(self, scope: Scope, query: str, with_tail: bool
              ) -> tuple[int, Sequence[ScoredRecord], TailDelta]:
        """:meth:`_rank_in` the current generation; while that one is being rebuilt (too
        far behind the head), in the previous one, if there is one it can be."""
        try:
            return self._rank_in(self._projection, self._tail, scope, query, with_tail)
        except ProjectionStale:
            if self._previous is None:
                raise
            projection, tail = self._previous
            return self._rank_in(projection, tail, scope, query, with_tail)

    def _rank_in(self, projection: ProjectionStore, tail: JournalTail, scope: Scope,
                 query: str, with_tail: bool
                 ) -> tuple[int, Sequence[ScoredRecord], TailDelta]:
        """The pinned head, the lexical ranking at it (projection + journal tail, its best
        candidates' scores completed), the tail itself (read even without query terms when
        ``with_tail``: semantic needs it)."""
        terms = query_terms(query)
        if not terms:
            head = self._records.head_cursor(scope)
            if not with_tail:
                return head, [], TailDelta()
            mark = projection.search_stats(scope, []).watermark
            return head, [], tail.delta(scope, mark, head)
        # One round trip for all three: the head, the stats with the watermark, the postings.
        head_future = in_background(lambda: self._records.head_cursor(scope))
        stats_future = in_background(lambda: projection.search_stats(scope, terms))
        # Each term reads its best postings (highest impact first) within one per-search
        # budget, all terms at once: cost and round trips are bounded (docs/search.md).
        k = self._config.postings_for(len(terms))
        postings = projection.postings_for_terms(scope, terms, k)
        head, stats = head_future.result(), stats_future.result()
        delta = tail.delta(scope, stats.watermark, head)
        view = merge_tail(terms, postings, stats.corpus, stats.dfs, delta, k)
        if not any(view.postings.values()):
            return head, [], delta
        # The best candidates' scores completed with every query term (one more round
        # trip, only when a term's read stopped at its share: docs/search.md).
        return head, self._completion.rank(projection, scope, terms, view, postings, k,
                                           delta.current), delta

    def _revalidate(self, scope: Scope, ranked: Sequence[ScoredRecord], need: int,
                    system_as_of: int, now_ms: int, purpose: str | None) -> list[Hit]:
        """Eligible hits in rank order, at most ``need``, read in consistent batches."""
        hits: list[Hit] = []
        position = 0
        while position < len(ranked) and len(hits) < need:
            size = min(_BATCH, need - len(hits)) if position == 0 else _BATCH
            batch = ranked[position:position + size]
            position += len(batch)
            rows = self._records.get_records(scope, [hit.record_id for hit in batch])
            for scored in batch:
                row = rows.get(scored.record_id)
                if row is not None and is_eligible(
                    row, system_as_of=system_as_of, valid_as_of_ms=now_ms, purpose=purpose
                ):
                    hits.append((scored, row))
                    if len(hits) == need:
                        break
        return hits

    def _packet(self, hit: Hit, rank: int, withheld: frozenset[str] = frozenset()
                ) -> dict[str, Any]:
        scored, row = hit
        # Eligible rows always carry their record; ``or {}`` only satisfies the type.
        redacted = self._redactor.redact(scored.record_id, row.record or {}, withheld)
        return {
            "record": redacted.record,
            "redacted_fields": redacted.redacted_fields,
            "redaction_receipt_digest": redacted.receipt_digest,
            "score": scored.score,
            "rank": rank,
        }

    def _page(self, pinned: _Pinned, hits: list[Hit], args: SearchArgs) -> dict[str, Any]:
        page = hits[pinned.offset:pinned.offset + args.limit]
        more = len(hits) > pinned.offset + args.limit
        delivered = [hit[0].record_id for hit in hits]
        packets: list[dict[str, Any]] = []

        def value(k: int, final: bool) -> dict[str, Any]:
            return self._value(pinned, page[:k], packets[:k] if final else [],
                               delivered[:pinned.offset + k], more or k < len(page), final)

        # A packet too large for a page of its own is delivered with its largest fields
        # redacted (services/budget.py): one oversized record never fails the page.
        room = args.max_packet_bytes - size_of(value(1, False)) if page else 0
        packets.extend(
            fit_record(partial(self._packet, hit, pinned.offset + i + 1), room)
            for i, hit in enumerate(page)
        )
        _, result = fit_prefix(packets, lambda k: value(k, False), lambda k: value(k, True),
                               args.max_packet_bytes)
        try:
            SearchValue.model_validate(result)
        except ValidationError:
            raise StoreUnavailable from None  # never hand out a value off the contract
        return result

    def _value(self, pinned: _Pinned, page: list[Hit], packets: list[dict[str, Any]],
               delivered: list[str], has_more: bool, final: bool) -> dict[str, Any]:
        value: dict[str, Any] = {
            "records": packets,
            "rank_receipt": self._receipt(pinned, page),
        }
        if has_more:
            value["next_page_cursor"] = self._codec.encode(PageState(
                scope=pinned.scope.key,
                request_digest=pinned.request_digest,
                profile_digest=pinned.profile.config_digest,
                system_as_of=pinned.system_as_of,
                delivered_digest=delivered_digest(delivered),
                offset=len(delivered),
            ))
        value["response_digest"] = response_digest(value) if final else _PLACEHOLDER_DIGEST
        return value

    def _receipt(self, pinned: _Pinned, page: list[Hit]) -> dict[str, Any]:
        ids = [scored.record_id for scored, _ in page]
        checked = [
            {"record_id": row.record_id, "record_digest": row.record_digest,
             "recorded_cursor": str(row.recorded_cursor)}
            for _, row in page
        ]
        receipt: dict[str, Any] = {
            "request_digest": pinned.request_digest,
            "profile": pinned.profile.profile,
            "profile_version": pinned.profile.version,
            "config_digest": pinned.profile.config_digest,
            "channels": [c.as_dict() for c in pinned.profile.channels],
            "valid_as_of": pinned.valid_as_of,
            "system_as_of": str(pinned.system_as_of),
            "candidate_count": pinned.eligible_count,
            "ordered_ids_digest": digest(DigestKind.ORDERED_IDS, ids),
            "revalidation_digest": digest(DigestKind.REVALIDATION_RECEIPT, {
                "system_as_of": str(pinned.system_as_of),
                "valid_as_of": pinned.valid_as_of,
                "records": checked,
            }),
            "issued_at": pinned.valid_as_of,
        }
        receipt["receipt_digest"] = rank_receipt_digest(receipt)
        return receipt
