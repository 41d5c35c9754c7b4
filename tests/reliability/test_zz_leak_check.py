"""The leak check, collected last in this tier: nothing sensitive in any log, metric or trace.

Every test of the reliability tier registers the texts, citation locators and secret
fixtures it sends (``leakwatch.register``); the session-wide watch (conftest) has been
collecting every log record, every metric blob Powertools serialized and every value
Tracer would annotate or attach. A control first proves each channel is really watched.
"""

from __future__ import annotations

import secrets

from engram_memory import runtime
from engram_memory.domain.context import Tool

from tests.reliability import leakwatch
from tests.reliability.support import World, capture_args, error_of

# Assembled at run time so the repository itself holds no credential-shaped literal.
SECRET_FIXTURES = (
    "aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY",
    "AKIA" + "Z7Q3V6N2XK5T4PLM",
    "ghp_" + "k3R9" * 9,
)


def _occurs(value: str) -> bool:
    return any(value in line for line in leakwatch.lines())


def test_the_watch_sees_logs_metrics_and_trace_values() -> None:
    canaries = [f"watch-control-{channel}-{secrets.token_hex(8)}"
                for channel in ("log", "metric", "trace")]
    runtime.logger.info("control line", extra={"control": canaries[0]})
    runtime.metrics.add_metric(name=canaries[1], unit="Count", value=1)
    runtime.metrics.flush_metrics()
    runtime.tracer.put_annotation(key="control", value=canaries[2])
    assert [_occurs(c) for c in canaries] == [True, True, True]


def test_secrets_refused_at_capture_never_reach_an_output(world: World) -> None:
    for n, secret in enumerate(SECRET_FIXTURES):
        args = capture_args(f"secret fixture {n}")
        args["payload"]["components"][1]["text"] += f" {secret}"
        leakwatch.register(secret)
        error = error_of(world.call(Tool.CAPTURE, args))
        assert error["retriable"] is False


def test_no_captured_text_locator_or_secret_appears_in_any_output() -> None:
    registered = leakwatch.sensitive()
    assert len(registered) >= len(SECRET_FIXTURES)
    assert leakwatch.lines(), "the watch collected nothing: it is not installed"
    assert leakwatch.leaks() == []
