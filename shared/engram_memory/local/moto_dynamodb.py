"""moto's DynamoDB made safe under concurrent requests, and given DynamoDB's costs.

The local service (in its moto process) and the benches run moto's server. As it ships, moto
serves requests from several threads at once, and its TransactWriteItems is not safe
under that: it deep-copies each table a transaction names and, when a condition fails,
restores the copies, which undoes any commit another thread made meanwhile (measured on
the local service: 8 concurrent capturing clients, 60 captures acknowledged, 5 of them
gone from the journal; moto also raised "dictionary changed size during iteration"). Two
more of its costs grow with a whole table: those copies (O(table) per transaction) and
every Query sorting the whole table to keep one partition (O(table) per posting list); a
local store of a few hundred records became unusable.

``prepare_moto_dynamodb`` (run by the local service's moto process before moto starts) makes
moto serve one DynamoDB request at a time, as DynamoDB is serializable, then removes both
costs, and writes the reads' answers in one pass (``moto_read_answers``). Every shim
keeps moto's own request parsing, conditions, updates and paging;
tests/reliability/test_moto_dynamodb_shims.py runs scenarios on shimmed and plain moto
and requires identical answers. The ``mock_aws`` test tiers run moto as it
ships (with a request lock of their own, tests/integration/conftest.py).
"""

from __future__ import annotations

import bisect
import copy as std_copy
import threading
import types
from contextlib import AbstractContextManager
from typing import Any

from engram_memory.local import moto_read_answers
from engram_memory.local.request_turns import RequestTurns, is_long

_TURNS = RequestTurns()
_INSTALLED: set[str] = set()


def dynamodb_turn() -> AbstractContextManager[None]:
    """Hold the DynamoDB request turn (a long one): for work on moto's tables outside its
    API (the moto process's snapshot and bulk writes)."""
    return _TURNS.turn(long=True)


def prepare_moto_dynamodb() -> None:
    """Install the shims, process-wide and idempotent; the reads' answers are written in
    one pass (``moto_read_answers``)."""
    serialize_requests()
    check_conditions_before_applying()
    query_reads_one_partition()
    moto_read_answers.install()


def serialize_requests() -> None:
    """One DynamoDB request at a time on the moto server of this process.

    Served from several threads at once, moto's TransactWriteItems can fail ("dictionary
    changed size") or roll back over another request's commit (a lost acknowledged write).
    The mock_aws integration tests take the same kind of lock. Whose turn is next:
    ``request_turns`` (point calls before Queries, so one search cannot hold up another
    workspace's get).
    """
    if "serialize" in _INSTALLED:
        return
    from moto.dynamodb.responses import DynamoHandler

    original = DynamoHandler.call_action

    def call_action(self: Any) -> Any:
        with _TURNS.turn(long=is_long(self._get_action())):
            return original(self)

    DynamoHandler.call_action = call_action  # type: ignore[method-assign]
    _INSTALLED.add("serialize")


def check_conditions_before_applying() -> None:
    """Roll a transaction back by not applying it, not by restoring table copies.

    With requests serialized and the elements of one transaction naming distinct items,
    checking every condition against the current state first is equivalent to moto's
    apply-then-restore. If all hold, moto's own code applies the elements without taking
    its snapshots; if some fail, the transaction is cancelled with the reasons moto gives
    (the same exception, codes, messages and ALL_OLD items) and nothing is applied; if the
    check cannot be evaluated, moto's unchanged path (snapshots and all) answers.
    """
    if "transactions" in _INSTALLED:
        return
    from moto.dynamodb import models
    from moto.dynamodb.exceptions import TransactionCanceledException
    from moto.dynamodb.models.table import Table

    original = models.DynamoDBBackend.transact_write_items

    def no_table_copies(value: Any, memo: Any = None) -> Any:
        return value if isinstance(value, Table) else std_copy.deepcopy(value, memo)

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        reasons = _cancellation_reasons(self, transact_items)
        if reasons is None:
            original(self, transact_items)
            return
        if any(code is not None for code, _, _ in reasons):
            raise TransactionCanceledException(reasons)
        # moto's module calls ``copy.deepcopy``: swap its ``copy`` for this one call.
        setattr(models, "copy", types.SimpleNamespace(  # noqa: B010
            deepcopy=no_table_copies, copy=std_copy.copy))
        try:
            original(self, transact_items)
        finally:
            setattr(models, "copy", std_copy)  # noqa: B010

    models.DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
    _INSTALLED.add("transactions")


Reason = tuple[Any, Any, Any]


def _cancellation_reasons(backend: Any, transact_items: list[dict[str, Any]]
                          ) -> list[Reason] | None:
    """moto's per-element reasons, from the current state; None when unsure (moto decides).

    An element whose condition fails gets what moto records for it (ConditionalCheckFailed,
    its message, the old item when ALL_OLD was asked); the others ``(None, None, None)``.
    """
    from moto.dynamodb.comparisons import get_filter_expression
    from moto.dynamodb.exceptions import ConditionalCheckFailed

    seen: set[tuple[str, str]] = set()
    reasons: list[Reason] = []
    try:
        if len(transact_items) > 100:
            return None
        for element in transact_items:
            if len(element) != 1:
                return None
            op_type, op = next(iter(element.items()))
            if op_type not in {"ConditionCheck", "Put", "Delete", "Update"}:
                return None
            table = backend.get_table(op["TableName"])
            if op_type == "Put":
                key = {table.hash_key_attr: op["Item"][table.hash_key_attr]}
                if table.range_key_attr is not None:
                    key[table.range_key_attr] = op["Item"][table.range_key_attr]
            else:
                key = op["Key"]
            item_id = (op["TableName"], str(sorted(key.items())))
            if item_id in seen:
                return None
            seen.add(item_id)
            condition = op.get("ConditionExpression")
            if condition is None:
                reasons.append((None, None, None))
                continue
            check = get_filter_expression(condition, op.get("ExpressionAttributeNames"),
                                          op.get("ExpressionAttributeValues"))
            current = backend.get_item(op["TableName"], key)
            if check.expr(current):
                reasons.append((None, None, None))
                continue
            old = None
            if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                old = current.to_json()["Attributes"]
            failed = ConditionalCheckFailed(item=old)
            reasons.append(("ConditionalCheckFailed", str(failed.message), old))
    except Exception:  # anything unusual: moto's own path answers
        return None
    return reasons


_SORTED_KEYS: dict[tuple[int, Any], tuple[dict[Any, Any], list[Any]]] = {}
"""Per (table, partition key): the partition's dict (held, so no other dict takes its id
while it is here) and its range keys in order, kept in order by every put and delete."""
_SORTED_PARTITIONS = 4096
_SORTED_KEYS_LOCK = threading.Lock()
"""The index is shared by every thread that reaches moto: a moto server without
``serialize_requests`` (the gate tests' own) serves requests at once."""


def _sorted_keys(table: Any, hash_key: Any, items: dict[Any, Any]) -> list[Any]:
    """The partition's range keys in order; sorted again only when the partition is not
    the one indexed (a restored table) or its size disagrees with the index."""
    if not items:
        return []
    entry = _SORTED_KEYS.get((id(table), hash_key))
    if entry is None or entry[0] is not items or len(entry[1]) != len(items):
        if len(_SORTED_KEYS) >= _SORTED_PARTITIONS:
            _SORTED_KEYS.clear()
        entry = (items, sorted(items))
        _SORTED_KEYS[(id(table), hash_key)] = entry
    return entry[1]


def _key_added(table: Any, hash_key: Any, range_key: Any) -> None:
    with _SORTED_KEYS_LOCK:
        _add_key(table, hash_key, range_key)


def _add_key(table: Any, hash_key: Any, range_key: Any) -> None:
    entry = _SORTED_KEYS.get((id(table), hash_key))
    if entry is not None:
        keys = entry[1]
        at = bisect.bisect_left(keys, range_key)
        if at == len(keys) or keys[at] != range_key:
            keys.insert(at, range_key)


def _key_removed(table: Any, hash_key: Any, range_key: Any) -> None:
    with _SORTED_KEYS_LOCK:
        _remove_key(table, hash_key, range_key)


def _remove_key(table: Any, hash_key: Any, range_key: Any) -> None:
    entry = _SORTED_KEYS.get((id(table), hash_key))
    if entry is not None:
        keys = entry[1]
        at = bisect.bisect_left(keys, range_key)
        if at < len(keys) and keys[at] == range_key:
            del keys[at]


def _in_range(keys: list[Any], low: Any, high: Any, limit: int | None, start: Any,
              forward: bool) -> list[Any]:
    """The keys a ``BETWEEN`` Query needs moto to see: those in range (moto applies the
    condition again); with a ``Limit`` and no start key only the first ``Limit`` + 1 in the
    query's direction. Whenever moto could stop at the range's end after a full page, the
    partition's next key past the range too: moto answers ``LastEvaluatedKey`` then."""
    lo, hi = bisect.bisect_left(keys, low), bisect.bisect_right(keys, high)
    in_range = keys[lo:hi] if forward else keys[lo:hi][::-1]
    if not limit or (not start and len(in_range) < limit):
        return in_range
    if not start and len(in_range) > limit:
        return in_range[:limit + 1]
    beyond = keys[hi:hi + 1] if forward else keys[max(lo - 1, 0):lo]
    return [*in_range, *beyond]


def query_reads_one_partition() -> None:
    """A base-table Query reads the queried partition, not a sorted copy of the table.

    moto answers a base-table Query by sorting *every* item of the table and filtering on
    the hash key. This hands moto's own query code just the partition's items (index
    queries are untouched), found through the partition's range keys kept in order
    (``_SORTED_KEYS``: a put or delete of a key updates it in O(log n) comparisons, so a
    Query never walks its partition): for a ``BETWEEN`` key condition only the keys in
    range, and a Query with ``Limit`` but no start key (and no range condition but
    ``BETWEEN``) gets only the first ``Limit`` items in the requested direction, as
    DynamoDB reads them (and one more, so that moto answers ``LastEvaluatedKey`` when there
    is more). A posting write's two-block Query then costs the same at 50,000 records as
    at 1,000.
    """
    if "query" in _INSTALLED:
        return
    from moto.dynamodb.models.table import Table

    original = Table.query
    original_put = Table.put_item
    original_delete = Table.delete_item

    def partition_of(table: Any, hash_key: Any, ranged: Any, bounds: Any, limit: Any,
                     start: Any, forward: Any) -> list[Any]:
        items = table.items.get(hash_key, {})
        forward = forward is not False
        if ranged != "BETWEEN" and (not limit or start or ranged):
            return list(items.values())
        with _SORTED_KEYS_LOCK:
            keys = _sorted_keys(table, hash_key, items)
            if ranged == "BETWEEN" and len(bounds) == 2:
                low, high = bounds
                chosen = _in_range(keys, low, high, limit, start, forward)
            elif ranged == "BETWEEN":
                return list(items.values())
            else:  # one past the limit: moto reads it to know there is more
                chosen = keys[:limit + 1] if forward else keys[-limit - 1:]
        # A key another thread deleted meanwhile (an unserialized server) is skipped.
        return [item for item in map(items.get, chosen) if item is not None]

    def query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        # moto's backend passes these positionally, index_name as the 7th after hash_key.
        index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
        if index_name is not None or hash_key is None or not self.range_key_attr:
            return original(self, hash_key, *args, **kwargs)
        ranged, bounds, limit, start, forward = args[0], args[1], args[2], args[3], args[4]
        partition = partition_of(self, hash_key, ranged, bounds, limit, start, forward)
        self.all_items = lambda: partition
        try:
            return original(self, hash_key, *args, **kwargs)
        finally:
            del self.all_items

    def put_item(self: Any, *args: Any, **kwargs: Any) -> Any:
        item = original_put(self, *args, **kwargs)
        if self.range_key_attr and item.range_key is not None:
            _key_added(self, item.hash_key, item.range_key)
        return item

    def delete_item(self: Any, hash_key: Any, range_key: Any) -> Any:
        item = original_delete(self, hash_key, range_key)
        if item is not None and range_key:
            _key_removed(self, hash_key, range_key)
        return item

    Table.put_item = put_item  # type: ignore[method-assign]
    Table.delete_item = delete_item  # type: ignore[method-assign]
    Table.query = query  # type: ignore[method-assign]
    _INSTALLED.add("query")
