from __future__ import annotations

from typing import Any

from tests.integration.read_path.conftest import ReadPath, error_code, ids

TEXTS = [
    "Quokka " * n + f"note number {n} about the quokka service." for n in range(1, 8)
]


def _admit_all(read_path: ReadPath) -> list[str]:
    record_ids = [read_path.admit(text) for text in TEXTS]
    read_path.project()
    return record_ids


def _value(envelope: dict[str, Any]) -> dict[str, Any]:
    assert envelope["ok"], envelope
    value: dict[str, Any] = envelope["output"]["value"]
    return value


def _edit(cursor: str, index: int) -> str:
    replacement = "A" if cursor[index] != "A" else "B"
    return cursor[:index] + replacement + cursor[index + 1:]


def test_pages_concatenate_to_the_full_ordered_list_without_duplicate_or_gap(
    read_path: ReadPath,
) -> None:
    _admit_all(read_path)
    full = ids(read_path.search("quokka", limit=50))
    assert len(full) == len(TEXTS)
    pages: list[list[str]] = []
    ranks: list[int] = []
    cursor = None
    while True:
        args: dict[str, Any] = {"limit": 3}
        if cursor is not None:
            args["page_cursor"] = cursor
        value = _value(read_path.search("quokka", **args))
        pages.append([p["record"]["record_id"] for p in value["records"]])
        ranks.extend(p["rank"] for p in value["records"])
        cursor = value.get("next_page_cursor")
        if cursor is None:
            break
    assert [len(p) for p in pages] == [3, 3, 1]
    assert [rid for page in pages for rid in page] == full
    assert ranks == list(range(1, len(TEXTS) + 1))


def test_an_edited_or_forged_cursor_is_a_stale_page(read_path: ReadPath) -> None:
    _admit_all(read_path)
    cursor = _value(read_path.search("quokka", limit=2))["next_page_cursor"]
    for edited in (_edit(cursor, 5), _edit(cursor, len(cursor) - 3), "forged.cursor", "x"):
        assert error_code(read_path.search("quokka", limit=2, page_cursor=edited)) == "STALE_PAGE"
    assert read_path.search("quokka", limit=2, page_cursor=cursor)["ok"]


def test_a_cursor_used_with_other_parameters_is_a_stale_page(read_path: ReadPath) -> None:
    _admit_all(read_path)
    cursor = _value(read_path.search("quokka", limit=2))["next_page_cursor"]
    assert error_code(read_path.search("quokka", limit=3, page_cursor=cursor)) == "STALE_PAGE"
    assert error_code(read_path.search("quokka note", limit=2, page_cursor=cursor)) == "STALE_PAGE"
    assert error_code(
        read_path.search("quokka", limit=2, max_packet_bytes=8192, page_cursor=cursor)
    ) == "STALE_PAGE"


def test_a_cursor_used_in_another_workspace_is_a_stale_page(read_path: ReadPath) -> None:
    _admit_all(read_path)
    cursor = _value(read_path.search("quokka", limit=2))["next_page_cursor"]
    envelope = read_path.call_search(
        {"query": "quokka", "limit": 2, "page_cursor": cursor}, workspace_id="ws-other"
    )
    assert error_code(envelope) == "STALE_PAGE"


def test_a_new_acceptance_that_changes_the_delivered_order_makes_the_cursor_stale(
    read_path: ReadPath,
) -> None:
    _admit_all(read_path)
    cursor = _value(read_path.search("quokka", limit=2))["next_page_cursor"]
    top = read_path.admit("Quokka quokka.", decision_text="Quokka quokka quokka quokka.")
    read_path.project()
    assert ids(read_path.search("quokka", limit=1)) == [top]
    assert error_code(read_path.search("quokka", limit=2, page_cursor=cursor)) == "STALE_PAGE"


def test_forgetting_a_delivered_record_makes_the_cursor_stale(read_path: ReadPath) -> None:
    _admit_all(read_path)
    value = _value(read_path.search("quokka", limit=2))
    read_path.forget(value["records"][0]["record"]["record_id"])
    envelope = read_path.search("quokka", limit=2, page_cursor=value["next_page_cursor"])
    assert error_code(envelope) == "STALE_PAGE"


def test_a_continuation_reports_its_own_pinned_points(read_path: ReadPath) -> None:
    _admit_all(read_path)
    first = _value(read_path.search("quokka", limit=4))
    read_path.clock.now += 1000
    second = _value(read_path.search("quokka", limit=4, page_cursor=first["next_page_cursor"]))
    assert second["rank_receipt"]["request_digest"] == first["rank_receipt"]["request_digest"]
    assert second["rank_receipt"]["valid_as_of"] > first["rank_receipt"]["valid_as_of"]
    assert [p["rank"] for p in second["records"]] == [5, 6, 7]
    assert "next_page_cursor" not in second
