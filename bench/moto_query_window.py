"""moto's base-table Query reads a page after its start key, as DynamoDB does (benches only).

As it ships, moto answers a Query with ``ExclusiveStartKey`` by sorting the whole partition
(a Python comparison of two keys per step) and walking it from its first item to the start
key, so paging through a partition of n items costs O(n² log n / page) on moto, where
DynamoDB reads one page per request (profiled in docs/performance.md, "Export and restore at
scale": an export of 5,000 records spent most of its time there). For partitions that are
only added to while they are paged (a bench's planted workspace), ``install`` keeps each
partition's sort-key order (rebuilt whenever the partition's size changes) and hands moto's
own query code only the items after the start key: within the ``begins_with`` prefix when
there is one, at most ``Limit + 1`` of them (moto reads one past the limit to know there is
more). moto's code still applies the key condition, the filter, the projection, the 1 MB
page limit and builds ``LastEvaluatedKey``; any other Query (an index, no start key, a
descending scan, another key condition, a non-string sort key) is moto's unchanged.
``bench/backup_scale.py --moto-query as-shipped`` turns it off; paged queries read the
same items either way (tests/reliability/test_moto_query_window.py), and an export of 2,500
records wrote the same bundle digest either way (checked by hand, 2026-12-06).
Never used by the product: the local service runs moto with its own shims
(``engram_memory.local.moto_dynamodb``).
"""

from __future__ import annotations

import bisect
from typing import Any

_INSTALLED: list[bool] = []
_ENABLED = [True]


def set_enabled(enabled: bool) -> None:
    """Turn the window on or off (moto's own Query answers when off)."""
    _ENABLED[0] = enabled


def install() -> None:
    """Wrap moto's ``Table.query``; call before ``prepare_moto_dynamodb`` (idempotent)."""
    if _INSTALLED:
        return
    from moto.dynamodb.models.table import Table

    original = Table.query
    ordered: dict[tuple[int, str], tuple[int, list[str], list[Any]]] = {}

    def order(table: Any, hash_key: Any) -> tuple[list[str], list[Any]] | None:
        partition = table.items.get(hash_key, {})
        cached = ordered.get((id(table), str(hash_key.value)))
        if cached is None or cached[0] != len(partition):
            items = list(partition.values())
            if any(item.range_key is None or item.range_key.type != "S" for item in items):
                return None
            items.sort(key=lambda item: item.range_key.value)
            cached = (len(items), [item.range_key.value for item in items], items)
            ordered[(id(table), str(hash_key.value))] = cached
        return cached[1], cached[2]

    def window(table: Any, hash_key: Any, comparison: Any, values: list[Any], limit: int,
               start: dict[str, Any]) -> list[Any] | None:
        found = order(table, hash_key)
        start_value = start.get(table.range_key_attr, {}).get("S")
        if found is None or not isinstance(start_value, str):
            return None
        keys, items = found
        first = bisect.bisect_right(keys, start_value)
        if comparison is None:
            return items[first:first + limit + 1]
        prefix = values[0].value
        if not isinstance(prefix, str):
            return None
        first = max(first, bisect.bisect_left(keys, prefix))
        chosen = items[first:first + limit + 1]
        return [item for item in chosen if item.range_key.value.startswith(prefix)]

    def query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        # moto's backend passes these positionally (its DynamoDBBackend.query).
        comparison, values, limit, start, forward = args[0], args[1], args[2], args[3], args[4]
        index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
        usable = (index_name is None and hash_key is not None and self.range_key_attr
                  and start and limit and forward is not False
                  and comparison in (None, "BEGINS_WITH")
                  and not (kwargs.get("range_key_conditions") or [])[1:] and _ENABLED[0])
        chosen = window(self, hash_key, comparison, values, limit, start) if usable else None
        if chosen is None:
            return original(self, hash_key, *args, **kwargs)
        previous = self.__dict__.get("all_items")
        self.all_items = lambda: chosen
        try:
            return original(self, hash_key, *args, **kwargs)
        finally:
            if previous is None:
                del self.all_items
            else:
                self.all_items = previous

    Table.query = query  # type: ignore[method-assign]
    _INSTALLED.append(True)
