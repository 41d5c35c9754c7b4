"""The projection is rebuilt from the main table alone (the recovery path of docs/deploy.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from engram_memory import reproject as reproject_module
from engram_memory.adapters.dynamodb.projection_store import space
from engram_memory.domain.context import Scope
from engram_memory.reproject import (
    Checkpoint,
    in_process_projector,
    main,
    rebuild,
)

from tests.integration.read_path.conftest import ReadPath, ids


def _wipe_projection(read_path: ReadPath) -> int:
    client, table = read_path.aws.dynamodb, read_path.aws.settings.projection_table_name
    items = client.scan(TableName=table, ProjectionExpression="pk, sk")["Items"]
    for item in items:
        client.delete_item(TableName=table, Key={"pk": item["pk"], "sk": item["sk"]})
    return len(items)


def _watermark_and_head(read_path: ReadPath) -> tuple[int, int]:
    s = read_path.aws.settings
    scope = f"{s.tenant_id}#ws-main"
    stats = read_path.aws.dynamodb.get_item(
        TableName=s.projection_table_name, ConsistentRead=True,
        Key={"pk": {"S": f"STATS#{space(Scope(s.tenant_id, 'ws-main'))}"},
             "sk": {"S": "STATS"}}).get("Item", {})
    head = read_path.aws.dynamodb.get_item(
        TableName=s.table_name, ConsistentRead=True,
        Key={"pk": {"S": f"JOURNAL#{scope}"}, "sk": {"S": "HEAD"}})["Item"]
    cursor = int(head["cursor"]["N"])
    return int(stats["wm"]["N"]) if "wm" in stats else 0, cursor


def _rebuild_recording(read_path: ReadPath, workspace: str | None,
                       ) -> tuple[list[str], Checkpoint]:
    """Rebuild through the in-process projector; the sort keys sent, in order, and the counts."""
    projector = in_process_projector()
    sent: list[dict[str, Any]] = []

    def recording(event: dict[str, Any]) -> dict[str, Any]:
        sent.append(event)
        return projector(event)

    done = rebuild(read_path.aws.dynamodb, Checkpoint(read_path.aws.settings.table_name,
                                                       workspace), recording, save=lambda _: None)
    return _records_of(sent), done


def test_a_lost_projection_is_rebuilt_from_canonical_state(read_path: ReadPath) -> None:
    kept = read_path.admit("the quokka survey of rottnest island")
    forgotten = read_path.admit("a quokka census that must be forgotten")
    read_path.project()
    read_path.forget(forgotten)
    read_path.project()
    assert ids(read_path.search("quokka")) == [kept]
    assert _wipe_projection(read_path) > 0  # the outage: postings, stats, watermark gone
    watermark, head = _watermark_and_head(read_path)
    assert (watermark, head > 0) == (0, True)

    sent, done = _rebuild_recording(read_path, None)
    # Both record items (never candidates, blobs, idempotency), then the latest event.
    assert [sk.split("#")[0] for sk in sent] == ["REC", "REC", "EV"]
    assert (done.sent, done.failed) == (3, 0)

    assert _watermark_and_head(read_path) == (head, head)  # no journal tail left to merge
    assert ids(read_path.search("quokka")) == [kept]  # forgotten stays forgotten
    assert ids(read_path.search("census")) == []
    assert _rebuild_recording(read_path, None)[0] == sent  # idempotent
    assert ids(read_path.search("quokka")) == [kept]


def test_the_rebuild_can_be_limited_to_one_workspace(read_path: ReadPath) -> None:
    read_path.admit("a record in the main workspace")
    assert len(_rebuild_recording(read_path, "ws-main")[0]) == 2  # the record, its event
    assert _rebuild_recording(read_path, "elsewhere")[0] == []


class _Interrupted(Exception):
    """The operator's Ctrl-C, a dropped connection: the rebuild stops mid-way."""


def _records_of(events: list[dict[str, Any]]) -> list[str]:
    return [r["dynamodb"]["Keys"]["sk"]["S"] for e in events for r in e["Records"]]


def test_an_interrupted_rebuild_resumes_without_resending_finished_batches(
        read_path: ReadPath, tmp_path: Path) -> None:
    made = [read_path.admit(f"resumable rebuild note {n} about wombats") for n in range(12)]
    read_path.project()
    _wipe_projection(read_path)
    table = read_path.aws.settings.table_name
    path = tmp_path / "checkpoint.json"
    projector = in_process_projector()
    acknowledged: list[dict[str, Any]] = []

    def failing_after_two(event: dict[str, Any]) -> dict[str, Any]:
        if len(acknowledged) == 2:
            raise _Interrupted
        answer = projector(event)
        acknowledged.append(event)
        return answer

    with pytest.raises(_Interrupted):
        rebuild(read_path.aws.dynamodb, Checkpoint(table, None), failing_after_two,
                save=lambda c: c.save(path), batch_size=4)
    first = _records_of(acknowledged)
    assert len(first) == 8
    saved = Checkpoint.load(path)
    assert saved is not None
    assert saved.sent == 8
    assert saved.resume_after is not None

    resumed: list[dict[str, Any]] = []

    def counting(event: dict[str, Any]) -> dict[str, Any]:
        resumed.append(event)
        return projector(event)

    done = rebuild(read_path.aws.dynamodb, saved, counting, save=lambda c: c.save(path),
                   batch_size=4)
    second = _records_of(resumed)
    assert not set(first) & set(second)  # nothing acknowledged is sent again
    assert sorted(first + second) == sorted([f"REC#{r}" for r in made] + [second[-1]])
    assert second[-1].startswith("EV#")  # the latest event last: watermark to the head
    assert (done.sent, done.failed) == (13, 0)
    watermark, head = _watermark_and_head(read_path)
    assert watermark == head
    assert sorted(ids(read_path.search("wombats", limit=20))) == sorted(made)


def test_the_command_shows_progress_resumes_and_prints_its_rate(
        read_path: ReadPath, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    made = [read_path.admit(f"command rebuild note {n} about numbats") for n in range(3)]
    read_path.project()
    _wipe_projection(read_path)
    path = tmp_path / "checkpoint.json"
    monkeypatch.setenv("ENGRAM_TABLE_NAME", read_path.aws.settings.table_name)
    projector = in_process_projector()
    calls: list[int] = []

    def interrupted_after_one(event: dict[str, Any]) -> dict[str, Any]:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the operator's Ctrl-C during the second batch
        return projector(event)

    monkeypatch.setattr(reproject_module, "in_process_projector", lambda: interrupted_after_one)
    command = ["--in-process", "--checkpoint", str(path), "--batch-size", "1"]
    assert main(command) == 130
    out, err = capsys.readouterr()
    assert "interrupted after 1 records; run the same command to resume" in err
    assert path.exists()

    monkeypatch.setattr(reproject_module, "in_process_projector", lambda: projector)
    assert main(command) == 0
    out, err = capsys.readouterr()
    assert "resuming: 1 records already sent" in err
    assert "main table scanned" in err  # the progress bar, with its ETA
    assert "records sent to the projector: 4; reported failed: 0;" in out  # 3 + the event
    assert "records/s this run" in out
    assert not path.exists()  # finished: nothing left to resume
    assert sorted(ids(read_path.search("numbats"))) == sorted(made)


def test_a_batch_with_a_failed_record_is_sent_again_on_resume(
        read_path: ReadPath, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    made = [read_path.admit(f"failing rebuild note {n} about bilbies") for n in range(6)]
    read_path.project()
    _wipe_projection(read_path)
    path = tmp_path / "checkpoint.json"
    monkeypatch.setenv("ENGRAM_TABLE_NAME", read_path.aws.settings.table_name)
    projector = in_process_projector()
    sent: list[dict[str, Any]] = []
    failed_once: list[str] = []
    first_run_going = [True]

    def failing_one_record_once(event: dict[str, Any]) -> dict[str, Any]:
        sent.append(event)
        if len(sent) == 3 and first_run_going[0]:
            raise KeyboardInterrupt  # had the run gone on, Ctrl-C during the next batch
        if len(sent) == 2 and not failed_once:
            # The projector's partial batch response: the second record was not applied.
            applied, failed = event["Records"][:1], event["Records"][1]
            projector({"Records": applied})
            failed_once.append(failed["dynamodb"]["Keys"]["sk"]["S"])
            return {"batchItemFailures": [{"itemIdentifier": failed["eventID"]}]}
        return projector(event)

    monkeypatch.setattr(reproject_module, "in_process_projector",
                        lambda: failing_one_record_once)
    command = ["--in-process", "--checkpoint", str(path), "--batch-size", "2",
               "--no-progress"]
    first_exit = main(command)
    _, err = capsys.readouterr()
    first_run = _records_of(sent)
    saved = Checkpoint.load(path)
    assert saved is not None  # kept: the failed batch is not behind it

    sent.clear()
    first_run_going[0] = False
    second_exit = main(command)
    out, _ = capsys.readouterr()
    resumed = _records_of(sent)
    assert failed_once[0] in resumed  # the unacknowledged key is sent again
    assert sorted(ids(read_path.search("bilbies", limit=20))) == sorted(made)
    assert not set(first_run[:2]) & set(resumed)  # the acknowledged batch is not
    # The first run stopped at the failed batch, its checkpoint before that batch.
    assert (first_exit, len(first_run), second_exit) == (1, 4, 0)
    assert "run the same command to send it again" in err
    assert (saved.sent, saved.failed) == (2, 0)
    assert "records sent to the projector: 7; reported failed: 0;" in out  # 6 + the event
    assert not path.exists()
    watermark, head = _watermark_and_head(read_path)
    assert watermark == head
    assert sorted(ids(read_path.search("bilbies", limit=20))) == sorted(made)
