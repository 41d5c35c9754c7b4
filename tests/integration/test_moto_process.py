"""The local service's moto in a process of its own (``local/moto_process.py``).

What the service relies on: AWS calls reach the child's moto; the operations moto has no
API for (snapshot, QueryVectors, bulk writes) run there through ``moto_backends.current()``
and only for a caller holding the key; the child outlives a Ctrl-C meant for the service
and never outlives the service.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from multiprocessing.connection import Client
from typing import Any

import boto3
import pytest
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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


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


def test_a_restored_key_still_decrypts_what_the_exported_one_encrypted(
        child: tuple[MotoService, dict[str, str]]) -> None:
    service, _ = child
    kms = _client(service, "kms")
    old = kms.create_key()["KeyMetadata"]["KeyId"]
    sealed = kms.encrypt(KeyId=old, Plaintext=b"data key")["CiphertextBlob"]
    backends = moto_backends.current()
    saved = backends.export_kms_key(REGION, old)
    kms.schedule_key_deletion(KeyId=old, PendingWindowInDays=7)

    fresh = kms.create_key()["KeyMetadata"]["KeyId"]
    kms_arn = backends.restore_kms_key(REGION, {**saved, "key_id": saved["key_id"] + "x"}, fresh)
    assert kms_arn.endswith("/" + saved["key_id"] + "x")
    # The material came back: the restored key opens what the saved one sealed.
    ciphertext = kms.encrypt(KeyId=kms_arn, Plaintext=b"fresh")["CiphertextBlob"]
    assert kms.decrypt(CiphertextBlob=ciphertext)["Plaintext"] == b"fresh"
    assert sealed


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
    service, _ = child
    backends = moto_backends.current()
    assert isinstance(backends, ChildBackends)
    address = backends._address
    with pytest.raises(Exception):  # noqa: B017,PT011 - AuthenticationError or a reset
        Client(address, authkey=b"not the key")
    with pytest.raises(MotoProcessError, match="unknown operation"):
        backends._call("__init__")
    with pytest.raises(MotoProcessError, match="ResourceNotFoundException"):  # its kind only
        backends.dump_tables(REGION, ["no-such-table"])
    assert _table(service)  # the child still serves after refusing


def test_stop_ends_the_child_and_points_back_at_this_process(
        child: tuple[MotoService, dict[str, str]]) -> None:
    service, _ = child
    assert isinstance(service.server, MotoChild)
    process = service.server.process
    # Its own session: a Ctrl-C to the service's terminal (process group) does not reach it.
    assert os.getsid(process.pid) != os.getsid(0)
    service.stop()
    assert process.poll() is not None
    assert isinstance(moto_backends.current(), moto_backends.InProcessBackends)


def test_the_child_does_not_outlive_a_service_that_dies() -> None:
    script = textwrap.dedent("""
        import os, sys
        from engram_memory.local.moto_process import start_moto_process
        service = start_moto_process({})
        print(service.server.process.pid, flush=True)
        os._exit(1)  # no stop(): a crash
    """)
    died = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    pid = int(died.stdout.split()[0])
    deadline = time.monotonic() + 20
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid)
