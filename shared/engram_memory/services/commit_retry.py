"""How long a lost commit keeps trying: bounded attempts, full jitter, the invocation's time.

A commit that loses the journal head to another writer of its workspace is rebuilt on the
new head and sent again (``mutation.commit_fenced``). Under contention the loser waits a
full-jitter exponential backoff between attempts (uniform in ``[0, min(cap, base·2^n)]``),
so the writers of one workspace spread out instead of colliding again in step, and it
stops at the first of: ``attempts`` commits sent, or too little time left in the
invocation to sleep and still send one more commit and answer (``reserve_s``). Only then
does the agent see FENCE_LOST: the workspace really did not have a free turn for this call
in the time it had.

``TimeLeft`` is the invocation's remaining time in seconds (the earlier of the host's
deadline and the Lambda's own end, bound by the runtime), or None where nothing bounds it
(a maintenance job, a unit test): then only the attempts bound the wait.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

Sleep = Callable[[float], None]
TimeLeft = Callable[[], float | None]


class Jitter(Protocol):
    """The random source of the backoff (``random.Random``-like)."""

    def uniform(self, a: float, b: float) -> float:
        """A float uniformly in [a, b]."""
        ...


def no_deadline() -> float | None:
    """The time left when nothing bounds the invocation."""
    return None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Bounds of one retry loop: attempts in all, backoff base and cap, time kept in reserve."""

    attempts: int
    base_s: float
    cap_s: float
    reserve_s: float

    def ceiling(self, retry: int) -> float:
        """The longest wait before retry number ``retry`` (0 = the first wait)."""
        return min(self.cap_s, self.base_s * float(2 ** min(retry, 30)))


# Rebuilds of one commit on a moved head. Measured on the local service (docs/performance.md,
# "Throughput"): 8 attempts with a 200 ms cap shed a quarter of 16 writers' captures as
# FENCE_LOST while the head still had free turns; the time budget is the real bound.
HEAD_POLICY = RetryPolicy(attempts=64, base_s=0.01, cap_s=0.5, reserve_s=1.0)
# Re-runs of a whole attempt after a taken key or a moved target: its next read answers.
REREAD_POLICY = RetryPolicy(attempts=4, base_s=0.01, cap_s=0.2, reserve_s=1.0)

_SYSTEM_JITTER = secrets.SystemRandom()


class Backoff:
    """One retry loop under a policy: counts attempts, sleeps, says when to give up."""

    def __init__(self, policy: RetryPolicy, sleep: Sleep, time_left: TimeLeft = no_deadline,
                 jitter: Jitter = _SYSTEM_JITTER) -> None:
        """Start before the first attempt; ``sleep``, ``time_left`` and ``jitter`` are ports."""
        self._policy = policy
        self._sleep = sleep
        self._time_left = time_left
        self._jitter = jitter
        self._attempts = 1  # the first attempt is under way
        self._waits = 0

    @property
    def attempts(self) -> int:
        """Attempts started so far (the first included)."""
        return self._attempts

    def again(self, *, wait: bool = True) -> bool:
        """Before another attempt: wait (unless ``wait`` is False) and return True, or
        return False, without waiting, when the attempts or the time are used up."""
        policy = self._policy
        if self._attempts >= policy.attempts:
            return False
        delay = self._jitter.uniform(0.0, policy.ceiling(self._waits)) if wait else 0.0
        left = self._time_left()
        if left is not None and left - delay < policy.reserve_s:
            return False
        if wait:
            self._waits += 1
            self._sleep(delay)
        self._attempts += 1
        return True
