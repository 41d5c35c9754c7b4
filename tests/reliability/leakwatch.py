"""Session-wide collection of every log line, metric blob and trace value, for the leak check.

The reliability conftest installs this once per session: a logging handler on the root
logger and on every Powertools logger (formatted with the Powertools formatter, plus the
raw record attributes and any traceback), and wrappers that copy what Powertools Metrics
serializes and what Tracer would annotate or attach as metadata. Tests register every
captured text, citation locator and secret fixture they send; ``leaks()`` lists any of
them found in what was collected.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Iterator, Mapping
from typing import Any

_lock = threading.Lock()
_lines: list[str] = []
_sensitive: set[str] = set()
# Shorter strings would match innocently (e.g. a component id); sensitive values are long.
MIN_SENSITIVE_CHARS = 12


def record(text: str) -> None:
    """Keep one observed output line."""
    with _lock:
        _lines.append(text)


def lines() -> list[str]:
    """Everything observed so far."""
    with _lock:
        return list(_lines)


def register(*values: str) -> None:
    """Mark strings that must never appear in a log line, metric or trace."""
    with _lock:
        _sensitive.update(v for v in values if len(v) >= MIN_SENSITIVE_CHARS)


def sensitive() -> set[str]:
    """The registered strings."""
    with _lock:
        return set(_sensitive)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def register_arguments(args: Mapping[str, Any]) -> None:
    """Register the content of capture arguments: texts, locators, refs and attestation."""
    payload = args.get("payload", {})
    if isinstance(payload, Mapping):
        for component in payload.get("components", []):
            register(str(component.get("text", "")))
        for citation in payload.get("citations", []):
            register(str(citation.get("locator", {}).get("value", "")))
    evidence = args.get("evidence", {})
    if isinstance(evidence, Mapping) and "attestation" in evidence:
        register(str(evidence["attestation"]))


def leaks() -> list[tuple[str, str]]:
    """(sensitive value, line) pairs: every place a registered value was observed."""
    found = []
    secret_values = sensitive()
    for line in lines():
        for value in secret_values:
            if value in line or json.dumps(value)[1:-1] in line:
                found.append((value, line[:200]))
    return found


class CollectingHandler(logging.Handler):
    """Records the formatted line, the raw attributes and any traceback of each record."""

    def __init__(self, formatter: logging.Formatter | None) -> None:
        """``formatter``: the Powertools JSON formatter, when available."""
        super().__init__(level=logging.DEBUG)
        self._structured = formatter

    def emit(self, log_record: logging.LogRecord) -> None:
        """Keep everything the record could print."""
        parts = [log_record.getMessage(), repr(log_record.__dict__)]
        if log_record.exc_info:
            parts.append(logging.Formatter().formatException(log_record.exc_info))
        if self._structured is not None:
            # A formatter quirk must not hide the raw parts.
            with contextlib.suppress(Exception):
                parts.append(self._structured.format(log_record))
        record("\n".join(parts))
