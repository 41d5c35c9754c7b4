"""The one way every function builds its Powertools Tracer.

Only botocore is patched: the AWS calls are what a trace must show, and Powertools'
default (``patch_all``) imports and wraps every library the X-Ray SDK knows that happens
to be installed (requests, sqlite3, httplib, ...), a cold-start cost for nothing
(docs/performance.md, "Cold starts"). With ``POWERTOOLS_TRACE_DISABLED=true``, or outside
Lambda, Powertools patches nothing at all.

When tracing is on, a call run in the background (``engram_memory.concurrency``) gets the
caller's trace entity, so it appears in the caller's trace instead of X-Ray logging a
missing context.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Tracer

from engram_memory import concurrency

TRACED_MODULES = ("botocore",)
_carrying = False


def tracer_for(service: str) -> Tracer:
    """A Tracer for ``service`` that patches only botocore."""
    tracer = Tracer(service=service, patch_modules=TRACED_MODULES)
    global _carrying
    if not tracer.disabled and not _carrying:
        concurrency.register_carrier(_trace_entity_carrier(tracer.provider))
        _carrying = True
    return tracer


def _trace_entity_carrier(recorder: Any) -> concurrency.Carrier:
    def capture() -> concurrency.Restore:
        entity = recorder.get_trace_entity()

        def restore() -> Callable[[], None]:
            if entity is None:
                return lambda: None
            recorder.set_trace_entity(entity)
            return recorder.clear_trace_entities  # type: ignore[no-any-return]

        return restore

    return capture
