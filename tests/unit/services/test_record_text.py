"""What the semantic channel embeds of a record: each distinct text once, primary first."""

from __future__ import annotations

from engram_memory.services.semantic import record_text


def record(*texts: tuple[str, str]) -> dict[str, object]:
    components = [{"component_id": f"c{i}", "kind": kind, "text": text}
                  for i, (kind, text) in enumerate(texts, start=1)]
    return {"primary_component_id": "c1", "components": components}


def test_a_title_that_opens_its_abstract_stays_first() -> None:
    # Measured on Cranfield: dropping such a title lowered semantic-alone nDCG@10.
    title = "flow past a wing in a slipstream ."
    abstract = title + " an experimental study of the lift."
    embedded = record_text("r", record(("decision", title), ("context", abstract)))
    assert embedded == f"{title}\n{abstract}"


def test_a_text_repeated_in_another_component_is_embedded_once() -> None:
    text = "Caroline went to the support group on 7 May."
    assert record_text("r", record(("context", text), ("context", text))) == text
    assert record_text("r", record(("decision", text), ("evidence", text))) == text


def test_distinct_texts_are_all_embedded_primary_first() -> None:
    embedded = record_text("r", record(("context", "the context"), ("decision", "the why"),
                                       ("evidence", "the proof")))
    assert embedded == "the context\nthe why\nthe proof"
