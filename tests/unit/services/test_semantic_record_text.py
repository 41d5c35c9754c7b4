"""What the embedder reads of a record: each distinct field text once, primary first."""

from __future__ import annotations

from engram_memory.services.semantic import record_text


def record(*components: tuple[str, str]) -> dict[str, object]:
    return {"primary_component_id": "c0",
            "components": [{"component_id": f"c{n}", "kind": kind, "text": text}
                           for n, (kind, text) in enumerate(components)]}


def test_a_text_repeated_in_two_fields_is_embedded_once() -> None:
    note = "Retries for card payments back off exponentially."
    assert record_text("mem_a", record(("decision", note), ("decision", note))) == note
    assert record_text("mem_a", record(("context", note), ("context", note))) == note


def test_distinct_texts_all_count_primary_first() -> None:
    rec = record(("context", "Billing retries."), ("context", "Agreed on 3 March."),
                 ("decision", "Five attempts at most."))
    assert record_text("mem_b", rec) == (
        "Billing retries.\nFive attempts at most.\nAgreed on 3 March.")
