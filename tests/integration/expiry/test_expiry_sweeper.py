"""The retention expiry sweeper, on moto, through the Lambda handlers."""

from __future__ import annotations

import json
import logging
import threading

import pytest
from engram_memory import bootstrap
from engram_memory.composition import expiry as expiry_root
from engram_memory.domain.journal import verify_chain
from engram_memory.services.expiry import Outcome
from engram_memory.services.ports.write import DueExpiry

from functions.expiry_sweeper import handler as sweeper_module
from tests.integration.expiry.support import HOUR_MS, SCOPE, Expiry
from tests.support.posting_blocks import postings_by_term


def _expire_events(expiry: Expiry) -> list[dict]:
    return [dict(e.body) for e in expiry.journal() if e.body["operation"] == "expire"]


def test_admission_writes_an_expiry_index_entry_only_for_records_that_expire(
        expiry: Expiry) -> None:
    expiring = expiry.admit("Otter cache is temporary.", expires_in_ms=HOUR_MS)
    expiry.admit("Otter cache owner is the data team.")
    [entry] = expiry.index_items()
    assert entry["record_id"]["S"] == expiring
    assert int(entry["expires_at_ms"]["N"]) == expiry.clock.now + HOUR_MS
    assert entry["derivative_rule"]["S"] == "make-ineligible"
    assert entry["sk"]["S"] == f"{expiry.clock.now + HOUR_MS:015d}#{expiring}"


def test_a_due_record_is_expired_exactly_once_and_loses_its_content(expiry: Expiry) -> None:
    record_id = expiry.admit("Pangolin flag is on until the migration ends.",
                             expires_in_ms=HOUR_MS)
    events_before = len(expiry.journal())
    expiry.clock.now += 2 * HOUR_MS
    first = expiry.sweep()
    assert (first["ok"], first["expired"], first["failed"], first["more_due"]) == (
        True, 1, 0, False)
    item = expiry.record_item(record_id)
    assert item["state"]["S"] == "expired"
    assert "record_json" not in item
    assert "record_parts" not in item
    assert item["projection_invalidation"]["S"] == "pending"
    assert expiry.index_items() == []
    [event] = _expire_events(expiry)
    assert (event["from_state"], event["to_state"], event["principal"]) == (
        "accepted_current", "expired", "system:expiry-sweeper")
    assert event["subject"] == {"record_id": record_id}
    assert len(expiry.journal()) == events_before + 1
    again = expiry.sweep()
    assert (again["expired"], again["replayed"], again["dropped"]) == (0, 0, 0)
    assert len(expiry.journal()) == events_before + 1
    verify_chain(expiry.journal())
    stored = repr(expiry.aws.scan(expiry.aws.settings.table_name))
    assert "Pangolin flag" not in stored


def test_a_record_expiring_twice_through_a_stale_listing_is_a_replay(expiry: Expiry) -> None:
    record_id = expiry.admit("Quokka export window.", expires_in_ms=HOUR_MS)
    [entry] = expiry.index_items()
    due = DueExpiry(record_id=record_id, expires_at_ms=int(entry["expires_at_ms"]["N"]),
                    derivative_rule="make-ineligible")
    expiry.clock.now += 2 * HOUR_MS
    sweeper = expiry_root.service()
    assert sweeper.expire(SCOPE, due) is Outcome.EXPIRED
    count = len(expiry.journal())
    assert sweeper.expire(SCOPE, due) is Outcome.REPLAYED
    assert len(expiry.journal()) == count


def test_concurrent_sweepers_expire_a_record_once(expiry: Expiry) -> None:
    expiry.admit("Raccoon batch size is 500.", expires_in_ms=HOUR_MS)
    expiry.admit("Raccoon batch window is nightly.", expires_in_ms=HOUR_MS)
    expiry.clock.now += 2 * HOUR_MS
    results: list[dict] = []
    threads = [threading.Thread(target=lambda: results.append(expiry.sweep()))
               for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(r["expired"] for r in results) == 2
    assert sum(r["failed"] for r in results) == 0
    assert len(_expire_events(expiry)) == 2
    verify_chain(expiry.journal())


def test_a_retained_record_is_expired_but_keeps_its_content(expiry: Expiry) -> None:
    expiry.aws.configure(ENGRAM_RETAIN_ALLOWED="true")
    bootstrap.override(clock=expiry.clock, gate=expiry.gate)
    record_id = expiry.admit("Sable audit trail kept.", expires_in_ms=HOUR_MS, rule="retain")
    expiry.clock.now += 2 * HOUR_MS
    assert expiry.sweep()["expired"] == 1
    item = expiry.record_item(record_id)
    assert item["state"]["S"] == "expired"
    assert "Sable audit trail kept." in item["record_json"]["S"]
    assert expiry.get(record_id)["error"]["code"] == "NOT_FOUND"


def test_records_without_expiry_or_not_yet_due_are_untouched(expiry: Expiry) -> None:
    expiry.admit("Tapir keeps forever.")
    expiry.admit("Tapir expires later.", expires_in_ms=3 * HOUR_MS)
    expiry.clock.now += 2 * HOUR_MS
    before = expiry.aws.scan_all()
    result = expiry.sweep()
    assert (result["expired"], result["dropped"], result["more_due"]) == (0, 0, False)
    assert expiry.aws.scan_all() == before


def test_a_record_is_due_at_the_very_millisecond_it_expires(expiry: Expiry) -> None:
    record_id = expiry.admit("Urial rotation.", expires_in_ms=HOUR_MS)
    expiry.clock.now += HOUR_MS - 1
    assert expiry.sweep()["expired"] == 0
    expiry.clock.now += 1
    assert expiry.sweep()["expired"] == 1
    assert expiry.record_item(record_id)["state"]["S"] == "expired"


def test_get_and_search_never_return_an_expired_record_and_postings_go(
        expiry: Expiry) -> None:
    record_id = expiry.admit("Vicuna gateway timeout is 29 seconds.", expires_in_ms=HOUR_MS)
    kept = expiry.admit("Vicuna gateway owner is the edge team.")
    expiry.project()
    assert set(expiry.search("vicuna gateway")) == {record_id, kept}
    expiry.clock.now += 2 * HOUR_MS
    assert expiry.sweep()["expired"] == 1
    expiry.project()
    assert expiry.record_item(record_id)["projection_invalidation"]["S"] == "complete"
    postings = postings_by_term(expiry.aws.scan(expiry.aws.settings.projection_table_name))
    assert [term for term, ids in postings.items() if record_id in ids] == []
    assert postings["vicuna"] == [kept]
    # Canonical state, not the clock, now refuses it: even a reader at an earlier time.
    expiry.clock.now -= 2 * HOUR_MS
    assert expiry.search("vicuna gateway") == [kept]
    assert expiry.get(record_id)["error"]["code"] == "NOT_FOUND"


def test_an_expired_record_can_still_be_forgotten(expiry: Expiry) -> None:
    record_id = expiry.admit("Wombat runbook draft.", expires_in_ms=HOUR_MS)
    expiry.clock.now += 2 * HOUR_MS
    expiry.sweep()
    receipt = expiry.forget(record_id)["receipt"]
    assert (receipt["from_state"], receipt["to_state"]) == ("expired", "tombstoned")
    assert expiry.record_item(record_id)["state"]["S"] == "tombstoned"
    verify_chain(expiry.journal())


def test_a_record_forgotten_before_it_expires_only_loses_its_index_entry(
        expiry: Expiry) -> None:
    record_id = expiry.admit("Xenops cluster notes.", expires_in_ms=HOUR_MS)
    expiry.forget(record_id)
    count = len(expiry.journal())
    expiry.clock.now += 2 * HOUR_MS
    result = expiry.sweep()
    assert (result["expired"], result["dropped"]) == (0, 1)
    assert expiry.index_items() == []
    assert len(expiry.journal()) == count
    assert expiry.record_item(record_id)["state"]["S"] == "tombstoned"


def test_a_large_record_loses_every_part_on_expiry(expiry: Expiry) -> None:
    record_id = expiry.admit("Yak large record.", expires_in_ms=HOUR_MS, extra_components=6)
    assert int(expiry.record_item(record_id)["record_parts"]["N"]) >= 2
    expiry.clock.now += 2 * HOUR_MS
    assert expiry.sweep()["expired"] == 1
    leftovers = [item for item in expiry.aws.scan(expiry.aws.settings.table_name)
                 if item["sk"]["S"].startswith(f"REC#{record_id}#PART#")]
    assert leftovers == []
    assert "record_parts" not in expiry.record_item(record_id)


def test_every_configured_workspace_is_swept(expiry: Expiry) -> None:
    main = expiry.admit("Zebu index rebuild.", expires_in_ms=HOUR_MS)
    other = expiry.admit("Zebu index rebuild.", expires_in_ms=HOUR_MS, workspace_id="ws-other")
    expiry.clock.now += 2 * HOUR_MS
    result = expiry.sweep()
    assert (result["expired"], result["scopes"]) == (2, 2)
    assert expiry.record_item(main)["state"]["S"] == "expired"
    assert expiry.record_item(other, workspace_id="ws-other")["state"]["S"] == "expired"


def test_each_run_is_bounded_and_the_next_run_finishes(expiry: Expiry,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("Aphid", "Bongo", "Civet"):
        expiry.admit(f"{name} feed schedule.", expires_in_ms=HOUR_MS)
    monkeypatch.setattr(sweeper_module, "MAX_RECORDS_PER_RUN", 2)
    expiry.clock.now += 2 * HOUR_MS
    first = expiry.sweep()
    assert (first["expired"], first["more_due"]) == (2, True)
    second = expiry.sweep()
    assert (second["expired"], second["more_due"]) == (1, False)


def test_an_event_that_is_not_the_schedule_is_refused_unread(expiry: Expiry) -> None:
    expiry.admit("Dingo feed.", expires_in_ms=HOUR_MS)
    expiry.clock.now += 2 * HOUR_MS
    before = expiry.aws.scan_all()
    assert expiry.sweep({"record_id": "mem_x"}) == {"ok": False}
    assert expiry.aws.scan_all() == before


def test_the_sweeper_logs_counts_and_never_content_or_ids(
        expiry: Expiry, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    record_id = expiry.admit("Echidna secret launch codename Bluebird.",
                             expires_in_ms=HOUR_MS)
    expiry.clock.now += 2 * HOUR_MS
    caplog.clear()
    capsys.readouterr()
    with caplog.at_level(logging.INFO):
        expiry.sweep()
    # Every line as Powertools writes it (JSON with extra keys), plus whatever hit stdout.
    formatter = sweeper_module.logger.registered_formatter
    lines = [formatter.format(record) for record in caplog.records]
    logs = "\n".join(lines) + capsys.readouterr().out
    finished = [json.loads(line) for line in lines if "expiry sweep finished" in line]
    assert finished[0]["expired"] == 1
    for secret in ("Echidna", "Bluebird", record_id):
        assert secret not in logs
