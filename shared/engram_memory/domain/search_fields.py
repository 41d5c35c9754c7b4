"""How an accepted record becomes a ranker document (the five BM25F fields).

primary   the text of the primary component
decision  texts of the other components of kind ``decision``
evidence  texts of the other components of kind ``evidence``
context   texts of the other components of kind ``context``
citations each citation's ``source_ref`` and ``locator.value``
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engram_memory.domain.ranking import FieldDocument

_COMPONENT_FIELDS = {"decision": "decision", "evidence": "evidence", "context": "context"}


def record_document(record_id: str, record: Mapping[str, Any]) -> FieldDocument:
    """The ranker's view of a record (a plain JSON mapping as stored in ``record_json``)."""
    primary_id = record.get("primary_component_id")
    texts: dict[str, list[str]] = {name: [] for name in ("primary", *_COMPONENT_FIELDS)}
    for component in record.get("components", ()):
        text = str(component.get("text", ""))
        if component.get("component_id") == primary_id:
            texts["primary"].append(text)
            continue
        target = _COMPONENT_FIELDS.get(str(component.get("kind", "")))
        if target is not None:
            texts[target].append(text)
    citation_parts: list[str] = []
    for citation in record.get("citations", ()):
        citation_parts.append(str(citation.get("source_ref", "")))
        locator = citation.get("locator") or {}
        citation_parts.append(str(locator.get("value", "")))
    fields = {name: "\n".join(parts) for name, parts in texts.items()}
    fields["citations"] = "\n".join(citation_parts)
    return FieldDocument(record_id=record_id, fields=fields)
