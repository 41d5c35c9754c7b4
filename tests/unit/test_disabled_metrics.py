"""Metrics switched off (the local service, benches) print nothing, however many calls.

Disabled, Powertools' flush neither prints nor clears; once one metric held 100 values its
``add_metric`` printed the EMF line anyway (a stray JSON line on a bench's stdout).
"""

from __future__ import annotations

from typing import Any

import pytest
from aws_lambda_powertools.metrics import MetricUnit
from engram_memory.local.inprocess_invoker import LocalLambdaContext
from engram_memory.runtime import lambda_entry, metrics

CALLS = 150  # past Powertools' 100 values per metric


def _counting(event: dict[str, Any], context: Any) -> dict[str, Any]:
    metrics.add_metric(name="search.ok", unit=MetricUnit.Count, value=1)
    return {}


@pytest.fixture(autouse=True)
def _no_buffered_metrics() -> Any:
    metrics.clear_metrics()
    yield
    metrics.clear_metrics()


def test_disabled_metrics_never_print_an_emf_line(monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    entry = lambda_entry(_counting)
    for _ in range(CALLS):
        entry({}, LocalLambdaContext("engram-search"))
    assert "_aws" not in capsys.readouterr().out
    assert metrics.metric_set == {}


def test_enabled_metrics_still_publish_each_call(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    entry = lambda_entry(_counting)
    for _ in range(2):
        entry({}, LocalLambdaContext("engram-search"))
    lines = [line for line in capsys.readouterr().out.splitlines()
             if '"_aws"' in line and '"search.ok"' in line]
    assert len(lines) == 2  # one EMF line per call (beside the cold-start one)
