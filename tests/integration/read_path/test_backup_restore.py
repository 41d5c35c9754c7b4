"""Export, verify and restore (issue 31) on moto: real handlers write, the real routes copy.

Records are admitted, forgotten and left pending through the tool Lambda handlers; the
bundle is written by the export command's own loop over the export route, and restored by
the import command's own loop over the restore routes (a transport stands in for HTTP).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from engram_memory.adapters.dynamodb.export_reader import DynamoExportReader
from engram_memory.adapters.dynamodb.restore_writer import DynamoRestoreWriter
from engram_memory.backup.bundle import BundleProblem, read_lines, verify, verify_file
from engram_memory.cli import export as export_cli
from engram_memory.cli import import_ as import_cli
from engram_memory.cli.host_client import HostCallFailed
from engram_memory.domain.errors import EngramError
from engram_memory.gate import backup_routes
from engram_memory.gate.backup_routes import BackupRoutes

from tests.integration.read_path.conftest import ReadPath, ids
from tests.support.events import WORKSPACE_ID

TARGET = "ws-other"
pytestmark = pytest.mark.timeout(600)
TOPICS = ("billing", "latency", "database", "backup", "kubernetes", "invoice")
_STATUS = {"INVALID_SCHEMA": 400, "RESTORE_REFUSED": 409, "BACKUP_INVALID": 422}


class RoutesClient:
    """The CLI's HostClient over the real BackupRoutes, without HTTP."""

    def __init__(self, routes: BackupRoutes, tenant: str) -> None:
        self._routes, self._tenant = routes, tenant

    def call(self, method: str, path: str, *, params: dict[str, Any] | None = None,
             body: dict[str, Any] | None = None) -> dict[str, Any]:
        from engram_memory.domain.context import Scope

        try:
            if method == "GET" and path == "/host/export":
                query = {k: str(v) for k, v in (params or {}).items()}
                return self._routes.export(Scope(self._tenant, query["workspace_id"]), query)
            raw = json.dumps(body).encode()
            model = {"/host/restore": backup_routes.RestoreBegin,
                     "/host/restore/lines": backup_routes.RestoreLines,
                     "/host/restore/commit": backup_routes.RestoreCommit}[path]
            parsed = backup_routes.parse_body(model, raw)
            scope = Scope(self._tenant, parsed.workspace_id)
            if path == "/host/restore":
                return self._routes.begin(scope, parsed)
            if path == "/host/restore/lines":
                return self._routes.lines(scope, parsed)
            return self._routes.commit(scope, parsed, "operator@example.test")
        except EngramError as exc:
            raise HostCallFailed(_STATUS.get(exc.code, 500), exc.code) from exc

    def close(self) -> None:
        """Nothing to close."""


@pytest.fixture
def client(read_path: ReadPath) -> RoutesClient:
    s = read_path.aws.settings
    routes = BackupRoutes(DynamoExportReader(read_path.aws.dynamodb, s.table_name),
                          DynamoRestoreWriter(read_path.aws.dynamodb, s.table_name),
                          s.tenant_id, read_path.clock.now_ms)
    return RoutesClient(routes, s.tenant_id)


def _populate(read_path: ReadPath, n: int) -> list[str]:
    records = [read_path.admit(f"note {i}: the {TOPICS[i % len(TOPICS)]} runbook step {i} "
                               f"uses tool{i % 7}") for i in range(n)]
    read_path.call_capture_only("pending content that must never leave: zebra")
    return records


def _workspace_items(read_path: ReadPath, workspace: str) -> list[dict[str, Any]]:
    tenant = read_path.aws.settings.tenant_id
    prefixes = (f"SCOPE#{tenant}#{workspace}", f"JOURNAL#{tenant}#{workspace}",
                f"EXPIRY#{tenant}#{workspace}")
    return [item for item in read_path.aws.scan(read_path.aws.settings.table_name)
            if item["pk"]["S"] in prefixes]


def _get(read_path: ReadPath, record_id: str, workspace: str) -> dict[str, Any]:
    return read_path.get(record_id, workspace_id=workspace)


def test_round_trip_keeps_every_record_and_skips_one_forgotten_after_the_backup(
    read_path: ReadPath, client: RoutesClient, tmp_path: Path,
) -> None:
    records = _populate(read_path, 10)
    forgotten_before = records[:2]
    for record_id in forgotten_before:
        read_path.forget(record_id)
    read_path.project()
    bundle = tmp_path / "w.bundle"
    _, counts = export_cli.export(client, WORKSPACE_ID, bundle)  # type: ignore[arg-type]
    summary = verify_file(str(bundle))
    assert counts == {"records": 8, "tombstones": 2, "journal": summary.cursor}
    assert b"zebra" not in bundle.read_bytes()  # pending content never leaves

    forgotten_after = records[5]
    read_path.forget(forgotten_after)
    report = import_cli.restore(client, bundle, TARGET, summary,  # type: ignore[arg-type]
                                forgotten=[])
    assert report["skipped_record_ids"] == [forgotten_after]
    assert report["restored"] == 7
    read_path.project()

    for record_id in records:
        source, target = (_get(read_path, record_id, w) for w in (WORKSPACE_ID, TARGET))
        if record_id in [*forgotten_before, forgotten_after]:
            assert not source["ok"]
            assert not target["ok"]
            continue
        got = target["output"]["value"]["record"]
        want = source["output"]["value"]["record"]
        assert got == want  # same record_id, record_digest and content
    for query in ("billing runbook", "latency tool3", "database step", "kubernetes",
                  "invoice uses", "backup tool1"):
        assert (ids(read_path.search(query, limit=10)) ==
                ids(read_path.call_search({"query": query, "limit": 10},
                                          workspace_id=TARGET)))
    journal = [json.loads(i["event"]["S"]) for i in _workspace_items(read_path, TARGET)
               if i["sk"]["S"].startswith("EV#")]
    assert [e["operation"] for e in journal] == ["restore"]
    assert journal[0]["digests"]["bundle_digest"] == summary.bundle_digest


def test_a_record_forgotten_since_is_skipped_when_the_source_lists_it(
    read_path: ReadPath, client: RoutesClient, tmp_path: Path,
) -> None:
    records = _populate(read_path, 5)
    bundle = tmp_path / "w.bundle"
    export_cli.export(client, WORKSPACE_ID, bundle)  # type: ignore[arg-type]
    summary = verify_file(str(bundle))
    read_path.forget(records[1])
    forgotten = import_cli.forgotten_since(client, summary)  # type: ignore[arg-type]
    assert forgotten == [records[1]]


def _tampered(bundle: bytes) -> dict[str, bytes]:
    lines = bundle.splitlines(keepends=True)
    kinds = [json.loads(line)["kind"] for line in lines]
    record = kinds.index("record")
    tomb = kinds.index("tombstone")
    events = [i for i, k in enumerate(kinds) if k == "event"]
    changed_text = lines[record].replace(b"runbook", b"runbooK")
    swapped = list(lines)
    swapped[events[1]], swapped[events[2]] = swapped[events[2]], swapped[events[1]]
    return {
        "header byte": lines[0].replace(b"tenant-a", b"tenant-b"),
        "record byte": b"".join([*lines[:record], changed_text, *lines[record + 1:]]),
        "tombstone byte": b"".join([*lines[:tomb], lines[tomb].replace(b'"cursor":', b'"cursor":1'),
                                    *lines[tomb + 1:]]),
        "journal byte": b"".join([*lines[:events[0]],
                                  lines[events[0]].replace(b"capture", b"captura"),
                                  *lines[events[0] + 1:]]),
        "manifest byte": b"".join([*lines[:-1], lines[-1].replace(b'"records":', b'"records": ')]),
        "reordered event": b"".join(swapped),
        "dropped event": b"".join(lines[:events[1]] + lines[events[1] + 1:]),
        "truncated": b"".join(lines[:-1]),
        "trailing byte": bundle + b"\n",
    }


def test_a_changed_bundle_never_verifies_and_the_server_writes_nothing(
    read_path: ReadPath, client: RoutesClient, tmp_path: Path,
) -> None:
    records = _populate(read_path, 4)
    read_path.forget(records[0])
    bundle = tmp_path / "w.bundle"
    export_cli.export(client, WORKSPACE_ID, bundle)  # type: ignore[arg-type]
    good = verify_file(str(bundle))
    for name, data in _tampered(bundle.read_bytes()).items():
        if name == "header byte":
            data = data + bundle.read_bytes()[len(data.splitlines(keepends=True)[0]):]
        with pytest.raises(BundleProblem):
            verify(read_lines(io.BytesIO(data)))
        # The server verifies too: upload it anyway, as a client skipping the check would.
        bad = tmp_path / f"bad-{name.replace(' ', '-')}.bundle"
        bad.write_bytes(data)
        with pytest.raises(HostCallFailed) as failed:
            import_cli.restore(client, bad, TARGET, good, forgotten=[])  # type: ignore[arg-type]
        assert failed.value.code == "BACKUP_INVALID", name
        assert _workspace_items(read_path, TARGET) == [], name


def test_a_record_whose_content_no_longer_matches_its_digest_is_backup_invalid(
    read_path: ReadPath, client: RoutesClient, tmp_path: Path,
) -> None:
    _populate(read_path, 2)
    bundle = tmp_path / "w.bundle"
    export_cli.export(client, WORKSPACE_ID, bundle)  # type: ignore[arg-type]
    lines = bundle.read_bytes().splitlines(keepends=True)
    record = json.loads(lines[1])
    record["record"]["components"][0]["text"] = "rewritten"
    from engram_memory.backup.bundle import line
    lines[1] = line(record)
    with pytest.raises(BundleProblem) as problem:
        verify(read_lines(io.BytesIO(b"".join(lines))))
    assert "record_digest" in problem.value.reason


def test_a_workspace_that_is_not_empty_is_restore_refused(
    read_path: ReadPath, client: RoutesClient, tmp_path: Path,
) -> None:
    _populate(read_path, 2)
    bundle = tmp_path / "w.bundle"
    export_cli.export(client, WORKSPACE_ID, bundle)  # type: ignore[arg-type]
    summary = verify_file(str(bundle))
    before = _workspace_items(read_path, WORKSPACE_ID)
    with pytest.raises(HostCallFailed) as failed:
        import_cli.restore(client, bundle, WORKSPACE_ID, summary,  # type: ignore[arg-type]
                           forgotten=[])
    assert failed.value.code == "RESTORE_REFUSED"
    assert _workspace_items(read_path, WORKSPACE_ID) == before


def test_an_interrupted_restore_is_invisible_then_resumes(
    read_path: ReadPath, client: RoutesClient, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    records = _populate(read_path, 3)
    bundle = tmp_path / "w.bundle"
    export_cli.export(client, WORKSPACE_ID, bundle)  # type: ignore[arg-type]
    summary = verify_file(str(bundle))
    monkeypatch.setattr(import_cli, "BATCH_LINES", 3)
    original = client.call
    calls = {"lines": 0}

    def interrupted(method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        if path == "/host/restore/lines":
            calls["lines"] += 1
            if calls["lines"] == 2:
                raise HostCallFailed(503, "NETWORK")
        return original(method, path, **kwargs)

    monkeypatch.setattr(client, "call", interrupted)
    with pytest.raises(HostCallFailed):
        import_cli.restore(client, bundle, TARGET, summary, forgotten=[])  # type: ignore[arg-type]
    read_path.project()
    assert not _get(read_path, records[0], TARGET)["ok"]  # staged, not visible
    assert ids(read_path.call_search({"query": "runbook"}, workspace_id=TARGET)) == []
    report = import_cli.restore(client, bundle, TARGET, summary,  # type: ignore[arg-type]
                                forgotten=[])
    assert report["restored"] == 3
    assert _get(read_path, records[0], TARGET)["ok"]


_SINGLE_WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"}


def test_export_and_restore_stay_inside_the_host_apis_partition_fences(
    read_path: ReadPath, client: RoutesClient, tmp_path: Path,
) -> None:
    # The stack grants the host API these families per kind of call (infra/names.py,
    # tests/infra/test_least_privilege.py); moto does not evaluate IAM, so this ties the
    # grants to what export and restore really touch, and shows each family is needed.
    from engram_memory.domain.context import Scope
    from engram_memory.domain.instant import format_instant

    from infra.names import (
        HOST_BACKUP_READ_PARTITIONS,
        HOST_RESTORE_BATCH_PARTITIONS,
        HOST_RESTORE_JOURNAL_PARTITIONS,
    )
    from tests.support.partitions import families_used, item_partitions

    records = _populate(read_path, 3)
    read_path.admit("the invoice runbook expires", retention={
        "derivative_rule": "make-ineligible",
        "expires_at": format_instant(read_path.clock.now + 3600 * 1000)})
    read_path.forget(records[0])
    table = read_path.aws.settings.table_name
    touched: dict[str, set[str]] = {"read": set(), "batch": set(), "single": set()}

    def record(model: Any, params: dict[str, Any], **_: Any) -> None:
        kind = ("batch" if model.name == "BatchWriteItem" else
                "single" if model.name in _SINGLE_WRITES else "read")
        touched[kind].update(pk for name, pk in item_partitions(model.name, params)
                             if name == table)

    dynamodb = read_path.aws.dynamodb
    dynamodb.meta.events.register("before-parameter-build.dynamodb", record,
                                  unique_id="backup-fence")
    try:
        bundle = tmp_path / "w.bundle"
        export_cli.export(client, WORKSPACE_ID, bundle)  # type: ignore[arg-type]
        summary = verify_file(str(bundle))
        # A staged restore rolled back, then a whole one (the source's states read).
        client.call("POST", "/host/restore", body={
            "workspace_id": TARGET, "bundle_digest": summary.bundle_digest})
        lines = [line.decode() for line in bundle.read_bytes().splitlines(keepends=True)]
        client.call("POST", "/host/restore/lines", body={
            "workspace_id": TARGET, "bundle_digest": summary.bundle_digest, "offset": 0,
            "lines": lines[:4]})
        s = read_path.aws.settings
        BackupRoutes(DynamoExportReader(dynamodb, s.table_name),
                     DynamoRestoreWriter(dynamodb, s.table_name),
                     s.tenant_id, read_path.clock.now_ms).abort(Scope(s.tenant_id, TARGET))
        import_cli.restore(client, bundle, TARGET, summary,  # type: ignore[arg-type]
                           forgotten=[])
    finally:
        dynamodb.meta.events.unregister("before-parameter-build.dynamodb",
                                        unique_id="backup-fence")
    assert families_used(touched["read"], HOST_BACKUP_READ_PARTITIONS) == set(
        HOST_BACKUP_READ_PARTITIONS)
    assert families_used(touched["batch"], HOST_RESTORE_BATCH_PARTITIONS) == set(
        HOST_RESTORE_BATCH_PARTITIONS)
    assert families_used(touched["single"], HOST_RESTORE_JOURNAL_PARTITIONS) == set(
        HOST_RESTORE_JOURNAL_PARTITIONS)
