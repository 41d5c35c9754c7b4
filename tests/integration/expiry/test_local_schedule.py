"""The local service's stand-in for the sweeper's EventBridge schedule."""

from __future__ import annotations

import threading

from engram_memory.local.expiry_schedule import run_expiry_schedule, scheduled_event

from tests.integration.expiry.support import HOUR_MS, Expiry


def test_the_local_schedule_runs_the_real_sweeper_until_stopped(expiry: Expiry) -> None:
    record_id = expiry.admit("Heron rollout flag is temporary.", expires_in_ms=HOUR_MS)
    expiry.clock.now += 2 * HOUR_MS
    stop = threading.Event()
    thread = threading.Thread(
        target=run_expiry_schedule, args=(expiry.aws.settings, stop), kwargs={"interval_s": 0.05}
    )
    thread.start()
    try:
        for _ in range(200):
            if expiry.record_item(record_id)["state"]["S"] == "expired":
                break
            stop.wait(0.05)
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive()
    assert expiry.record_item(record_id)["state"]["S"] == "expired"


def test_the_local_schedule_sends_an_eventbridge_scheduled_event() -> None:
    event = scheduled_event("eu-west-1")
    assert event["detail-type"] == "Scheduled Event"
    assert event["source"] == "aws.events"
    assert event["region"] == "eu-west-1"
