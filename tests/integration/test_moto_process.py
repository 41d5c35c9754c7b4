"""The local service's moto in a process of its own (``local/moto_process.py``).

What the service relies on: AWS calls reach the child's moto; the operations moto has no
API for (snapshot, QueryVectors, bulk writes) run there through ``moto_backends.current()``
and only for a caller holding the key; the child outlives a Ctrl-C meant for the service
and never outlives the service.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from engram_memory.local import moto_backends
from engram_memory.local.moto_process import (
    ChildBackends,
    MotoChild,
    MotoProcessError,
    start_moto_process,
)
from engram_memory.local.moto_s3vectors import ensure_index
from engram_memory.local.moto_server import MotoService

from tests.support.tables import create_keyed_table

REGION = "us-east-1"
TABLE = "engram-t-main"


@pytest.fixture
def child() -> Iterator[tuple[MotoService, dict[str, str]]]:
    environ: dict[str, str] = {}
    service = start_moto_process(environ)
    try:
        yield service, environ
    finally:
        service.stop()


def _client(service: MotoService, name: str) -> Any:
    return boto3.client(name, region_name=REGION, endpoint_url=service.url,  # type: ignore[call-overload]
                        aws_access_key_id="testing", aws_secret_access_key="testing")


def _table(service: MotoService) -> Any:
    dynamodb = _client(service, "dynamodb")
    create_keyed_table(dynamodb, TABLE)
    return dynamodb


def test_aws_calls_and_backend_operations_reach_the_child(
        child: tuple[MotoService, dict[str, str]]) -> None:
    service, environ = child
    assert environ["AWS_ENDPOINT_URL"] == service.url
    assert isinstance(moto_backends.current(), ChildBackends)
    dynamodb = _table(service)
    item = {"pk": {"S": "p"}, "sk": {"S": "a"}, "blob": {"B": b"\x00\xff"}}
    dynamodb.put_item(TableName=TABLE, Item=item)
    backends = moto_backends.current()

    dump = backends.dump_tables(REGION, [TABLE])
    assert len(dump[TABLE]) == 1
    backends.write_items(REGION, {TABLE: [
        {"PutRequest": {"Item": {"pk": {"S": "p"}, "sk": {"S": "b"}}}},
        {"DeleteRequest": {"Key": {"pk": {"S": "p"}, "sk": {"S": "a"}}}}]})
    assert [i["sk"]["S"] for i in dynamodb.scan(TableName=TABLE)["Items"]] == ["b"]
    assert backends.load_tables(REGION, dump) == 1
    assert dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": "p"}, "sk": {"S": "a"}}
                             )["Item"] == item


def test_a_key_restored_in_a_new_moto_process_decrypts_what_the_old_one_sealed() -> None:
    first = start_moto_process({})
    try:
        kms = _client(first, "kms")
        key_id = kms.create_key()["KeyMetadata"]["KeyId"]
        sealed = kms.encrypt(KeyId=key_id, Plaintext=b"data key")["CiphertextBlob"]
        saved = moto_backends.current().export_kms_key(REGION, key_id)
    finally:
        first.stop()
    second = start_moto_process({})
    try:
        kms = _client(second, "kms")
        fresh = kms.create_key()["KeyMetadata"]["KeyId"]
        with pytest.raises(ClientError):
            kms.decrypt(CiphertextBlob=sealed)  # a new moto knows no such key
        arn = moto_backends.current().restore_kms_key(REGION, saved, fresh)
        assert arn.endswith("/" + key_id)
        assert kms.decrypt(CiphertextBlob=sealed)["Plaintext"] == b"data key"
    finally:
        second.stop()


def test_query_vectors_ranks_the_scopes_vectors_in_the_child(
        child: tuple[MotoService, dict[str, str]]) -> None:
    service, _ = child
    s3vectors = _client(service, "s3vectors")
    ensure_index(s3vectors, "bucket", "records", dimension=3)
    s3vectors.put_vectors(vectorBucketName="bucket", indexName="records", vectors=[
        {"key": "t#w#near", "data": {"float32": [1.0, 0.0, 0.0]}, "metadata": {"scope": "t#w"}},
        {"key": "t#w#far", "data": {"float32": [0.0, 1.0, 0.0]}, "metadata": {"scope": "t#w"}},
        {"key": "t#x#other", "data": {"float32": [1.0, 0.0, 0.0]},
         "metadata": {"scope": "t#x"}}])
    backends = moto_backends.current()

    hits = backends.scope_top_k(REGION, "bucket", "records", "t#w", [0.9, 0.1, 0.0], 5)
    assert [key for key, _ in hits] == ["t#w#near", "t#w#far"]
    exported = backends.export_vectors(REGION, "bucket", "records")
    assert sorted(v["key"] for v in exported) == ["t#w#far", "t#w#near", "t#x#other"]


def test_only_a_caller_with_the_key_gets_an_answer_and_only_to_known_operations(
        child: tuple[MotoService, dict[str, str]]) -> None:
    assert child
    backends = moto_backends.current()
    assert isinstance(backends, ChildBackends)
    address = backends._address
    with pytest.raises(AuthenticationError):
        Client(address, authkey=b"not the key")
    with pytest.raises(MotoProcessError, match="unknown operation"):
        backends._call("__init__")
    with pytest.raises(MotoProcessError) as failed:
        backends.dump_tables(REGION, ["no-such-table"])
    assert str(failed.value) == "dump_tables: ResourceNotFoundException"  # its kind, no text
    assert backends.dump_tables(REGION, []) == {}  # the listener still answers the key holder


def test_stop_ends_the_child_and_points_back_at_this_process(
        child: tuple[MotoService, dict[str, str]]) -> None:
    service, _ = child
    assert isinstance(service.server, MotoChild)
    process = service.server.process
    # Its own session: a Ctrl-C to the service's terminal (process group) does not reach it.
    assert os.getsid(process.pid) != os.getsid(0)
    service.stop()
    assert process.returncode == 0  # it left on its own when its stdin closed, not killed
    assert isinstance(moto_backends.current(), moto_backends.InProcessBackends)


def _gone(pid: int) -> bool:
    """Exited (a zombie waiting for a reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state == "Z"


def test_the_child_does_not_outlive_a_service_that_dies() -> None:
    script = textwrap.dedent("""
        import os, sys
        from engram_memory.local.moto_process import start_moto_process
        service = start_moto_process({})
        print(service.server.process.pid, flush=True)
        os._exit(1)  # no stop(): a crash
    """)
    died = subprocess.run([sys.executable, "-c", script], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, timeout=120, check=False)
    pid = int(died.stdout.split()[0])
    try:
        deadline = time.monotonic() + 20
        while not _gone(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _gone(pid)
    finally:
        if not _gone(pid):
            os.kill(pid, 9)


def test_a_silent_caller_holds_up_no_one_and_a_dead_child_fails_calls_fast(
        child: tuple[MotoService, dict[str, str]]) -> None:
    service, _ = child
    backends = moto_backends.current()
    assert isinstance(backends, ChildBackends)
    assert isinstance(service.server, MotoChild)
    with socket.create_connection(backends._address):  # connects, never authenticates
        assert backends.dump_tables(REGION, []) == {}
    service.server.process.kill()
    service.server.process.wait()
    with pytest.raises(MotoProcessError):
        backends.dump_tables(REGION, [])


def test_every_operation_of_the_protocol_is_served_and_none_else() -> None:
    declared = {name for name in vars(moto_backends.MotoBackends) if not name.startswith("_")}
    assert declared == moto_backends.OPERATIONS
    for name in declared:
        assert callable(getattr(ChildBackends, name))
        assert callable(getattr(moto_backends.InProcessBackends, name))
