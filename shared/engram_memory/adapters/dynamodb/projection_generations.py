"""Delete the projection items of other generations (after a rebuild, an operator's tool).

Items of another generation are never read or written by the running code (their keys name
another generation), so leaving them is safe; this only gives their storage back. Key
shapes: ``POST``/``DF`` = ``{family}#{t}#{w}#{g}#{term}``, ``DOC``/``STATS`` =
``{family}#{t}#{w}#{g}``; generation-1 keys had no ``{g}`` part.
"""

from __future__ import annotations

import time
from typing import Any

from engram_memory.adapters.dynamodb.projection_store import call_translated
from engram_memory.domain.ranking import PROJECTION_GENERATION

LEGACY_GENERATION = "t1i1"
"""The generation of keys without a generation part (tokenizer 1, impact key 1)."""
_PARTS_WITH_GENERATION = {"POST": 5, "DF": 5, "DOC": 4, "STATS": 4}
_BATCH = 25


def generation_of(pk: str) -> str | None:
    """The generation a projection partition key belongs to (None: not a projection key)."""
    parts = pk.split("#")
    expected = _PARTS_WITH_GENERATION.get(parts[0])
    if expected is None:
        return None
    if len(parts) == expected:
        return parts[3]
    return LEGACY_GENERATION if len(parts) == expected - 1 else None


def delete_other_generations(client: Any, table: str) -> int:
    """Delete every item whose key names a generation other than the current one."""
    request: dict[str, Any] = {"TableName": table, "ProjectionExpression": "pk, sk"}
    deleted = 0
    while True:
        page = call_translated(client, "scan", **request)
        stale = [{"DeleteRequest": {"Key": {"pk": item["pk"], "sk": item["sk"]}}}
                 for item in page.get("Items", [])
                 if generation_of(item["pk"]["S"]) not in (None, PROJECTION_GENERATION)]
        for start in range(0, len(stale), _BATCH):
            pending: list[dict[str, Any]] = stale[start:start + _BATCH]
            while pending:
                response = call_translated(client, "batch_write_item",
                                           RequestItems={table: pending})
                pending = response.get("UnprocessedItems", {}).get(table, [])
                if pending:
                    time.sleep(0.1)  # unprocessed = throttled: back off before resending
        deleted += len(stale)
        last = page.get("LastEvaluatedKey")
        if not last:
            return deleted
        request["ExclusiveStartKey"] = last

