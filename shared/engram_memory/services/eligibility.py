"""The one eligibility rule search and get share: is a record current, for this purpose?"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engram_memory.services.ports.read import ACCEPTED_CURRENT

if TYPE_CHECKING:
    from engram_memory.services.ports.read import RecordRow

PURPOSE_SCOPE_BOUND = "purpose"
PURPOSE_SCOPE_WORKSPACE = "workspace"
PURPOSE_SCOPES = (PURPOSE_SCOPE_BOUND, PURPOSE_SCOPE_WORKSPACE)


def visible_purpose(bound_purpose: str, purpose_scope: str) -> str | None:
    """The purpose whose records a read may see: the one the host bound to the call.

    ``None`` (every purpose of the workspace) only when the host widened reads with
    ``purpose_scope = "workspace"``; any other value keeps purpose limitation (fail closed).
    """
    return None if purpose_scope == PURPOSE_SCOPE_WORKSPACE else bound_purpose


def is_eligible(row: RecordRow | None, *, system_as_of: int, valid_as_of_ms: int,
                purpose: str | None) -> bool:
    """accepted_current, recorded by ``system_as_of``, inside valid time, not expired, and
    captured under ``purpose`` (``None``: any purpose, see ``visible_purpose``).

    Valid time is inclusive (``t <= now <= t_end``); ``expires_at`` is exclusive (a record
    is no longer eligible at the very millisecond it expires). A record of another purpose
    is ineligible exactly like an unknown one: NOT_FOUND in get, absent from search.
    """
    if row is None or row.record is None or row.state != ACCEPTED_CURRENT:
        return False
    if purpose is not None and row.record.get("purpose_ref") != purpose:
        return False
    if row.recorded_cursor > system_as_of:
        return False
    if valid_as_of_ms < row.valid_t:
        return False
    if row.valid_t_end is not None and valid_as_of_ms > row.valid_t_end:
        return False
    return row.expires_at_ms is None or valid_as_of_ms < row.expires_at_ms
