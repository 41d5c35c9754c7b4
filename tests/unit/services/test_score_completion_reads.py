"""Score completion's reads: a stale read never changes the ranking, no re-read is wasted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engram_memory.domain.context import Scope
from engram_memory.domain.ranking import (
    AnalyzedDocument,
    CorpusStats,
    Posting,
    RankingConfig,
    score_postings,
)
from engram_memory.domain.tail_merge import MergedView
from engram_memory.services.score_completion import ScoreCompletion

SCOPE = Scope("tenant", "ws")
LENGTHS = (3, 0, 0, 0, 0)
# Two postings read per term, both lists full: both terms are open. "c" holds beta, but
# its beta posting was not among the two read.
READ = {
    "alpha": [Posting("a", (3, 0, 0, 0, 0), LENGTHS), Posting("c", (2, 0, 0, 0, 0), LENGTHS)],
    "beta": [Posting("a", (1, 0, 0, 0, 0), LENGTHS), Posting("b", (3, 0, 0, 0, 0), LENGTHS)],
}
INDEXED = {
    "a": AnalyzedDocument("a", LENGTHS, {"alpha": (3, 0, 0, 0, 0), "beta": (1, 0, 0, 0, 0)}),
    "b": AnalyzedDocument("b", LENGTHS, {"beta": (3, 0, 0, 0, 0)}),
    "c": AnalyzedDocument("c", LENGTHS, {"alpha": (2, 0, 0, 0, 0), "beta": (2, 0, 0, 0, 0)}),
}
STATS = CorpusStats(10, (30, 0, 0, 0, 0))
DFS = {"alpha": 4, "beta": 4}
CONFIG = RankingConfig(postings_per_term=2, completion_cap=10)


class StaleThenConsistent:
    """A projection whose eventually consistent read misses ``stale`` (just written)."""

    def __init__(self, stale: set[str]) -> None:
        self.stale = stale
        self.reads: list[tuple[tuple[str, ...], bool]] = []

    def completion_documents(self, scope: Scope, record_ids: Sequence[str],
                             terms: Sequence[str], consistent: bool = False
                             ) -> dict[str, AnalyzedDocument | None]:
        self.reads.append((tuple(record_ids), consistent))
        return {rid: INDEXED[rid] for rid in record_ids if consistent or rid not in self.stale}


class NoRecords:
    def get_records(self, *_: Any, **__: Any) -> dict[str, Any]:
        raise AssertionError("every candidate is in the projection: no record is read")


def _exact() -> list[tuple[str, float]]:
    postings = {t: [Posting(d.record_id, d.frequencies[t], d.lengths)
                    for d in INDEXED.values() if t in d.frequencies] for t in ("alpha", "beta")}
    return [(h.record_id, h.score)
            for h in score_postings(["alpha", "beta"], postings, STATS, CONFIG, DFS)]


def _rank(store: StaleThenConsistent,
          tail: Sequence[AnalyzedDocument] = ()) -> list[tuple[str, float]]:
    completion = ScoreCompletion(NoRecords(), CONFIG)  # type: ignore[arg-type]
    view = MergedView({t: list(p) for t, p in READ.items()}, STATS, dict(DFS))
    ranked = completion.rank(store, SCOPE, ["alpha", "beta"], view,  # type: ignore[arg-type]
                             READ, 2, tail)
    return [(h.record_id, h.score) for h in ranked]


def test_a_list_a_stale_read_missed_is_read_again_consistently_and_ranked_exactly() -> None:
    fresh, stale = StaleThenConsistent(set()), StaleThenConsistent({"c"})

    assert _rank(stale) == _rank(fresh) == _exact()
    # Only the missed one is read again, and consistently.
    assert stale.reads[1:] == [(("c",), True)]
    assert len(fresh.reads) == 1


def test_the_tails_records_are_completed_from_what_the_tail_read_already_analyzed() -> None:
    store = StaleThenConsistent(set())

    assert _rank(store, tail=[INDEXED["c"]]) == _exact()
    assert all("c" not in ids for ids, _ in store.reads)
