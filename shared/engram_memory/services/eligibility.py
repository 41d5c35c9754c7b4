"""The one eligibility rule search and get share: is a record current right now?"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engram_memory.services.read_ports import ACCEPTED_CURRENT

if TYPE_CHECKING:
    from engram_memory.services.read_ports import RecordRow


def is_eligible(row: RecordRow | None, *, system_as_of: int, valid_as_of_ms: int) -> bool:
    """accepted_current, recorded by ``system_as_of``, inside valid time, not expired.

    Valid time is inclusive (``t <= now <= t_end``); ``expires_at`` is exclusive (a record
    is no longer eligible at the very millisecond it expires).
    """
    if row is None or row.record is None or row.state != ACCEPTED_CURRENT:
        return False
    if row.recorded_cursor > system_as_of:
        return False
    if valid_as_of_ms < row.valid_t:
        return False
    if row.valid_t_end is not None and valid_as_of_ms > row.valid_t_end:
        return False
    return row.expires_at_ms is None or valid_as_of_ms < row.expires_at_ms
