"""What the local service tells the person at its console.

In AWS the host learns that a confirmation waits from the EventBridge notification; locally
the person at the terminal is the host, so the queue consumer's ``HostNotifier`` is this:
one line per confirmation waiting for a decision, with the review page's address. Values
are printed with every non-printable character replaced, so an agent-supplied principal
cannot drive the terminal (escape sequences).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def printable(value: str, limit: int = 120) -> str:
    """``value`` with control characters replaced by ``?``, cut to ``limit`` characters."""
    clean = "".join(c if c.isprintable() else "?" for c in value)
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


class ConsoleHostNotifier:
    """A HostNotifier printing one line per waiting confirmation."""

    def __init__(self, review_url: str, out: TextIO | None = None) -> None:
        self._review_url = review_url
        self._out = out

    def notify(self, detail: dict[str, str]) -> None:
        """Print the waiting confirmation (no digest, no token) and where to decide it."""
        expires = time.strftime("%H:%M:%S", time.localtime(int(detail["expiresAtMs"]) // 1000))
        target = detail["target"] or "(a new capture)"
        line = (f"waiting for a human: {printable(detail['capability'])} "
                f"{printable(target)} in workspace {printable(detail['workspaceId'])} "
                f"for {printable(detail['principal'])}, until {expires} "
                f"-> {self._review_url}")
        print(line, file=self._out or sys.stdout, flush=True)
