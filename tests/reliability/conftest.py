"""Reliability tier fixtures: the mocked tenant (``aws``), a ``world`` driver, the leak watch.

The leak watch is installed once per session and collects every log record (root logger
and every non-propagating logger, Powertools-formatted too), every metric blob Powertools
serializes and every value Tracer would annotate or attach; ``test_zz_leak_check.py``
(collected last) scans it for any captured text, locator or secret fixture.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from aws_lambda_powertools import Tracer
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import (
    AmazonCloudWatchEMFProvider,
)
from engram_memory import runtime

from tests.integration.conftest import AwsEnv, aws  # noqa: F401 - re-exported fixture
from tests.reliability import leakwatch
from tests.reliability.mcp_harness import McpHarness, host_environment, new_host_key
from tests.reliability.support import World

_HANDLER = leakwatch.CollectingHandler(runtime.logger.registered_formatter)


def attach_everywhere() -> None:
    """The root logger, plus loggers that do not propagate to it (created at any time).

    Call it again after something reconfigured logging (uvicorn's dictConfig replaces the
    handlers of its own loggers when a server starts).
    """
    targets = [logging.getLogger()]
    for logger in list(logging.root.manager.loggerDict.values()):
        if isinstance(logger, logging.Logger) and not logger.propagate:
            targets.append(logger)
    for logger in targets:
        if _HANDLER not in logger.handlers:
            logger.addHandler(_HANDLER)


def _wrap_observability(patch: pytest.MonkeyPatch) -> None:
    serialize = AmazonCloudWatchEMFProvider.serialize_metric_set

    def serialize_metric_set(self: Any, *args: Any, **kwargs: Any) -> Any:
        blob = serialize(self, *args, **kwargs)
        leakwatch.record("metric " + json.dumps(blob, default=str))
        return blob

    patch.setattr(AmazonCloudWatchEMFProvider, "serialize_metric_set", serialize_metric_set)

    def wrap(name: str, describe: Any) -> None:
        original = getattr(Tracer, name)

        def traced(self: Any, *args: Any, **kwargs: Any) -> Any:
            text = describe(*args, **kwargs)
            if text:
                leakwatch.record(f"trace {name} {text}")
            return original(self, *args, **kwargs)

        patch.setattr(Tracer, name, traced)

    wrap("put_annotation", lambda key, value: f"{key}={value}")
    wrap("put_metadata", lambda key, value, namespace=None: f"{key}={value!r}")
    wrap("_add_response_as_metadata",
         lambda method_name=None, data=None, subsegment=None, capture_response=None:
         repr(data) if capture_response and data is not None else "")
    wrap("_add_full_exception_as_metadata",
         lambda method_name, error, subsegment, capture_error=None:
         repr(error) if capture_error is not False else "")


@pytest.fixture(scope="session", autouse=True)
def _leak_watch() -> Iterator[None]:
    patch = pytest.MonkeyPatch()
    _wrap_observability(patch)
    attach_everywhere()
    try:
        yield
    finally:
        patch.undo()
        for logger in [logging.getLogger(), *logging.root.manager.loggerDict.values()]:
            if isinstance(logger, logging.Logger) and _HANDLER in logger.handlers:
                logger.removeHandler(_HANDLER)


@pytest.fixture(autouse=True)
def _isolated_aws_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loggers created meanwhile are watched; no leftover endpoint escapes ``mock_aws``."""
    attach_everywhere()
    # A local service started by another tier points AWS_ENDPOINT_URL at its moto server;
    # these tests use the in-process mock and must not write there.
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)


@pytest.fixture
def world(aws: AwsEnv) -> World:  # noqa: F811 - the re-exported fixture
    """Handlers of one mocked tenant with a manual clock and the DynamoDB confirmation gate."""
    return World(aws)


@pytest.fixture
def harness(aws: AwsEnv) -> Iterator[McpHarness]:  # noqa: F811 - the re-exported fixture
    """The endpoint app (``/mcp``, metadata, ``/host/*``) over the mocked tenant."""
    key = new_host_key()
    settings_ = aws.configure(**host_environment(key))
    World(aws)  # the clock and confirmation gate the handlers use
    with McpHarness(settings_, key).running() as running:
        yield running
