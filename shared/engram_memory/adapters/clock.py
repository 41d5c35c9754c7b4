"""The system clock (the Clock port's production implementation)."""

from __future__ import annotations

import time


class SystemClock:
    """Wall-clock epoch milliseconds."""

    def now_ms(self) -> int:
        """Now, in epoch milliseconds."""
        return time.time_ns() // 1_000_000
