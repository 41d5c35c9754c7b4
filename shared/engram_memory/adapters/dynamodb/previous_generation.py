"""The previous projection generation, read-only, for searches during a rebuild.

Generation ``t2i2`` (the release before packed posting blocks) has the same tokenizer and
impact codes as the current one and differs only in how postings are stored: one item per
posting, sort key ``{impact code:09d}#{record_id}``, attributes ``tf`` and ``len`` (CSV).
Its stats, df counters and doc items have the current layout. While a scope's current
generation is being rebuilt (its watermark too far behind the journal head), a search is
answered from this generation plus the journal tail (docs/reindex.md, "Serving during a
rebuild"). Nothing writes it any more; ``engram-memory reindex --drop-stale`` deletes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engram_memory.adapters.dynamodb.projection_store import DynamoProjectionStore, _ints
from engram_memory.domain.ranking import IMPACT_VERSION, Posting
from engram_memory.domain.tokenizer import TOKENIZER_VERSION

if TYPE_CHECKING:
    from engram_memory.domain.context import Scope

PREVIOUS_GENERATION = "t2i2"
"""Served during a rebuild only while it shares the tokenizer and impact key (else None)."""


def previous_generation() -> str | None:
    """The generation a search may fall back to, if the current code can read it."""
    same_terms = f"t{TOKENIZER_VERSION}i{IMPACT_VERSION}" == PREVIOUS_GENERATION
    return PREVIOUS_GENERATION if same_terms else None


class PerPostingProjectionStore(DynamoProjectionStore):
    """Reads of generation ``t2i2``: one item per posting. Never written."""

    def __init__(self, client: Any, table_name: str,
                 generation: str = PREVIOUS_GENERATION) -> None:
        super().__init__(client, table_name, generation)

    def postings(self, scope: Scope, term: str, limit: int) -> list[Posting]:
        """The term's ``limit`` highest-impact postings: one descending Query (paged)."""
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": f"POST#{self._space(scope)}#{term}"}},
            "ProjectionExpression": "sk, tf, #len",
            "ExpressionAttributeNames": {"#len": "len"},
            "ScanIndexForward": False,
        }
        result: list[Posting] = []
        while len(result) < limit:
            request["Limit"] = limit - len(result)
            page = self.call("query", **request)
            for item in page.get("Items", []):
                result.append(Posting(item["sk"]["S"].partition("#")[2],
                                      _ints(item["tf"]["S"]), _ints(item["len"]["S"])))
            last = page.get("LastEvaluatedKey")
            if not last:
                break
            request["ExclusiveStartKey"] = last
        return result[:limit]
