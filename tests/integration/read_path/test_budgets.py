from __future__ import annotations

from typing import Any

from engram_memory.domain.canonical import canonical_json

from tests.integration.read_path.conftest import ReadPath, error_code, ids

LARGE = 1_048_576


def _size(value: dict[str, Any]) -> int:
    return len(canonical_json(value))


def _bulky(word: str, n: int) -> str:
    # Distinct filler so every record is a few KB, with the query word once.
    return f"{word} " + " ".join(f"filler{n}x{i}" for i in range(600))


def _value(envelope: dict[str, Any]) -> dict[str, Any]:
    assert envelope["ok"], envelope
    value: dict[str, Any] = envelope["output"]["value"]
    return value


def test_a_record_larger_than_the_budget_is_delivered_with_its_largest_fields_redacted(
    read_path: ReadPath,
) -> None:
    record_id = read_path.admit(_bulky("rhino", 1))
    read_path.project()
    full = _value(read_path.search("rhino", max_packet_bytes=LARGE))
    assert full["records"][0]["redacted_fields"] == []
    whole = _size(full)
    exact = _value(read_path.search("rhino", max_packet_bytes=whole))
    assert _size(exact) == whole
    assert exact["records"][0]["redacted_fields"] == []
    # One byte less: the page still answers, the largest field (components) left out and
    # named; get with a larger budget reads it whole (issue 26 item 1).
    smaller = _value(read_path.search("rhino", max_packet_bytes=whole - 1))
    assert _size(smaller) <= whole - 1
    packet = smaller["records"][0]
    assert packet["record"]["record_id"] == record_id
    assert packet["redacted_fields"] == ["/components"]
    assert packet["record"]["citations"] == full["records"][0]["record"]["citations"]
    assert "next_page_cursor" not in smaller
    smallest = _value(read_path.search("rhino", max_packet_bytes=4096))
    assert [p["record"]["record_id"] for p in smallest["records"]] == [record_id]


def test_a_page_that_does_not_fit_returns_fewer_records_and_a_cursor(
    read_path: ReadPath,
) -> None:
    first, second = read_path.admit(_bulky("tapir", 1)), read_path.admit(_bulky("tapir", 2))
    read_path.project()
    both = _value(read_path.search("tapir", max_packet_bytes=LARGE))
    assert {p["record"]["record_id"] for p in both["records"]} == {first, second}
    budget = _size(both)
    assert len(_value(read_path.search("tapir", max_packet_bytes=budget))["records"]) == 2

    one = _value(read_path.search("tapir", max_packet_bytes=budget - 1))
    assert [p["rank"] for p in one["records"]] == [1]
    assert _size(one) <= budget - 1
    rest = _value(read_path.search("tapir", max_packet_bytes=budget - 1,
                                   page_cursor=one["next_page_cursor"]))
    delivered = ids({"ok": True, "output": {"value": one}}) + ids(
        {"ok": True, "output": {"value": rest}})
    assert delivered == [p["record"]["record_id"] for p in both["records"]]
    assert [p["rank"] for p in rest["records"]] == [2]

    # Below one whole packet plus its cursor, the records come redacted, never an error
    # (two redacted packets are smaller than one whole: both fit).
    smallest = _size(one)
    assert len(_value(read_path.search("tapir", max_packet_bytes=smallest))["records"]) == 1
    cut = _value(read_path.search("tapir", max_packet_bytes=smallest - 1))
    assert _size(cut) <= smallest - 1
    assert [p["rank"] for p in cut["records"]] == [1, 2]
    assert [p["redacted_fields"] for p in cut["records"]] == [["/components"]] * 2


def test_get_over_budget_is_projection_oversized_at_the_exact_byte(read_path: ReadPath) -> None:
    record_id = read_path.admit(_bulky("urial", 1))
    read_path.project()
    value = _value(read_path.get(record_id))
    size = _size(value)
    exact = read_path.call_get({"record_id": record_id, "max_packet_bytes": size})
    assert _size(_value(exact)) == size
    over = read_path.call_get({"record_id": record_id, "max_packet_bytes": size - 1})
    assert error_code(over) == "PROJECTION_OVERSIZED"
