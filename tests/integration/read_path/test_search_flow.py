from __future__ import annotations

from tests.integration.read_path.conftest import ReadPath, ids


def test_an_admitted_record_is_found_by_search_with_its_citations(read_path: ReadPath) -> None:
    record_id = read_path.admit("The ingest queue retries three times with exponential backoff.")
    read_path.project()
    envelope = read_path.search("exponential backoff ingest")
    assert ids(envelope) == [record_id]
    packet = envelope["output"]["value"]["records"][0]
    assert packet["rank"] == 1
    assert {c["source_ref"] for c in packet["record"]["citations"]} == {"repo:platform", "wiki:ops"}
