"""The contract's Instant (``YYYY-MM-DDTHH:mm:ss.sssZ``) to and from epoch milliseconds."""

from __future__ import annotations

from datetime import UTC, datetime

_FORMAT = "%Y-%m-%dT%H:%M:%S"


def format_instant(epoch_ms: int) -> str:
    """Canonical UTC instant with millisecond precision, e.g. ``2026-01-01T00:00:00.000Z``."""
    moment = datetime.fromtimestamp(epoch_ms // 1000, tz=UTC)
    return f"{moment.strftime(_FORMAT)}.{epoch_ms % 1000:03d}Z"


def parse_instant(value: str) -> int:
    """Epoch milliseconds of a canonical instant; ValueError when it is not canonical."""
    if len(value) != 24 or not value.endswith("Z") or value[19] != ".":
        raise ValueError("not a canonical instant")
    try:
        moment = datetime.strptime(value[:19], _FORMAT).replace(tzinfo=UTC)
    except ValueError:
        raise ValueError("not a canonical instant") from None
    millis = value[20:23]
    if not millis.isascii() or not millis.isdigit():
        raise ValueError("not a canonical instant")
    epoch_ms = int(moment.timestamp()) * 1000 + int(millis)
    if format_instant(epoch_ms) != value:
        raise ValueError("not a canonical instant")
    return epoch_ms
