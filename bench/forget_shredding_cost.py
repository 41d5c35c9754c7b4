"""What per-record data keys would cost search and admission (docs/forget-ledger.md).

The alternative to the forget ledger's bound (forgotten content stays in PITR backups for
the recovery window) is crypto-shredding: each record's content sealed under its own data
key, kept in the key table (no PITR), so deleting that key at forget makes the content in
every backup unreadable at once. This bench measures, on moto and with the real AES-GCM of
``cryptography``, the added work per search of k hits and per admission, in two layouts:

* ``kms-per-record``: each record key wrapped by KMS: k ``kms.Decrypt`` per search;
* ``local-wrap``: record keys wrapped under the tenant data key (one KMS Decrypt per
  container, cached): the k wrapped keys come in the same BatchGetItem as the k records
  (BatchGetItem spans tables: no extra round trip), plus k AES-GCM unwraps and decrypts.

It prints the calls per operation and the time per operation on moto (relative only: moto
is in-process) and the AES-GCM time per record. Run: ``python bench/forget_shredding_cost.py``.
"""

from __future__ import annotations

import functools
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import boto3
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from moto import mock_aws

REGION = "us-east-1"
RECORD_BYTES = 2_000  # a typical record's JSON (docs/performance.md's corpus is ~1-3 KB)
HITS = (1, 10, 50)
REPEATS = 30


def _table(client: Any, name: str) -> None:
    client.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                   {"AttributeName": "sk", "KeyType": "RANGE"}],
                        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                              {"AttributeName": "sk", "AttributeType": "S"}])


def _median_ms(run: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


class Bench:
    """One mocked account: main and key tables, a KMS key, k records of each layout."""

    def __init__(self) -> None:
        self.ddb = boto3.client("dynamodb", region_name=REGION)
        self.kms = boto3.client("kms", region_name=REGION)
        _table(self.ddb, "main")
        _table(self.ddb, "keys")
        self.key_id = self.kms.create_key()["KeyMetadata"]["KeyId"]
        tenant = self.kms.generate_data_key(KeyId=self.key_id, KeySpec="AES_256")
        self.tenant_key = AESGCM(tenant["Plaintext"])
        self.content = os.urandom(RECORD_BYTES)
        self.kms_calls = 0

    def seed(self, count: int) -> None:
        """``count`` records: plain, and sealed with a KMS-wrapped and a locally wrapped key."""
        for i in range(count):
            record_key = AESGCM.generate_key(bit_length=256)
            nonce = os.urandom(12)
            sealed = nonce + AESGCM(record_key).encrypt(nonce, self.content, None)
            wrap_nonce = os.urandom(12)
            local = wrap_nonce + self.tenant_key.encrypt(wrap_nonce, record_key, None)
            by_kms = self.kms.encrypt(KeyId=self.key_id, Plaintext=record_key)["CiphertextBlob"]
            self.ddb.put_item(TableName="main", Item={
                "pk": {"S": "S"}, "sk": {"S": f"REC#{i:05d}"}, "plain": {"B": self.content},
                "sealed": {"B": sealed}})
            self.ddb.put_item(TableName="keys", Item={
                "pk": {"S": "K"}, "sk": {"S": f"REC#{i:05d}"}, "local": {"B": local},
                "kms": {"B": by_kms}})

    def search_plain(self, k: int) -> None:
        """Hydrate k hits: one BatchGetItem of the record items."""
        self._batch({"main": self._keys("S", k)})

    def search_local_wrap(self, k: int) -> None:
        """Records and their wrapped keys in ONE BatchGetItem; k unwraps and decrypts."""
        got = self._batch({"main": self._keys("S", k), "keys": self._keys("K", k)})
        keys = {item["sk"]["S"]: bytes(item["local"]["B"]) for item in got["keys"]}
        for item in got["main"]:
            wrapped = keys[item["sk"]["S"]]
            record_key = self.tenant_key.decrypt(wrapped[:12], wrapped[12:], None)
            sealed = bytes(item["sealed"]["B"])
            AESGCM(record_key).decrypt(sealed[:12], sealed[12:], None)

    def search_kms_per_record(self, k: int) -> None:
        """As local-wrap, but each record key unwrapped by a kms.Decrypt."""
        got = self._batch({"main": self._keys("S", k), "keys": self._keys("K", k)})
        keys = {item["sk"]["S"]: bytes(item["kms"]["B"]) for item in got["keys"]}
        for item in got["main"]:
            record_key = self.kms.decrypt(CiphertextBlob=keys[item["sk"]["S"]])["Plaintext"]
            self.kms_calls += 1
            sealed = bytes(item["sealed"]["B"])
            AESGCM(record_key).decrypt(sealed[:12], sealed[12:], None)

    def admit_plain(self, i: int) -> None:
        """The record put (the rest of the admission transaction is common to both)."""
        self.ddb.transact_write_items(TransactItems=[{"Put": {"TableName": "main", "Item": {
            "pk": {"S": "A"}, "sk": {"S": f"REC#{i}"}, "plain": {"B": self.content}}}}])

    def admit_local_wrap(self, i: int) -> None:
        """A fresh record key, sealed content, and the wrapped key put in the same commit."""
        record_key = AESGCM.generate_key(bit_length=256)
        nonce, wrap_nonce = os.urandom(12), os.urandom(12)
        sealed = nonce + AESGCM(record_key).encrypt(nonce, self.content, None)
        wrapped = wrap_nonce + self.tenant_key.encrypt(wrap_nonce, record_key, None)
        self.ddb.transact_write_items(TransactItems=[
            {"Put": {"TableName": "main", "Item": {
                "pk": {"S": "A"}, "sk": {"S": f"REC#{i}"}, "sealed": {"B": sealed}}}},
            {"Put": {"TableName": "keys", "Item": {
                "pk": {"S": "AK"}, "sk": {"S": f"REC#{i}"}, "local": {"B": wrapped}}}}])

    def _keys(self, pk: str, k: int) -> dict[str, Any]:
        return {"Keys": [{"pk": {"S": pk}, "sk": {"S": f"REC#{i:05d}"}} for i in range(k)],
                "ConsistentRead": True}

    def _batch(self, request: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
        answer = self.ddb.batch_get_item(RequestItems=request)
        return {name: list(items) for name, items in answer["Responses"].items()}


def _aes_us() -> tuple[float, float]:
    """AES-GCM time per record (µs): unwrap + decrypt, and key + seal + wrap."""
    tenant, content = AESGCM(AESGCM.generate_key(bit_length=256)), os.urandom(RECORD_BYTES)
    key = AESGCM.generate_key(bit_length=256)
    nonce = os.urandom(12)
    wrapped, sealed = tenant.encrypt(nonce, key, None), AESGCM(key).encrypt(nonce, content, None)
    n = 20_000
    start = time.perf_counter()
    for _ in range(n):
        AESGCM(tenant.decrypt(nonce, wrapped, None)).decrypt(nonce, sealed, None)
    read = (time.perf_counter() - start) / n * 1e6
    start = time.perf_counter()
    for _ in range(n):
        fresh = AESGCM.generate_key(bit_length=256)
        AESGCM(fresh).encrypt(os.urandom(12), content, None)
        tenant.encrypt(os.urandom(12), fresh, None)
    return read, (time.perf_counter() - start) / n * 1e6


def main() -> int:
    """Print the comparison."""
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_DEFAULT_REGION": REGION}.items():
        os.environ.setdefault(name, value)
    with mock_aws():
        bench = Bench()
        bench.seed(max(HITS))
        print(f"record content {RECORD_BYTES} B; median of {REPEATS} runs on moto "
              "(in-process: relative only)")
        print(f"{'operation':<28}{'plain ms':>10}{'local-wrap ms':>15}{'kms/record ms':>15}"
              f"{'KMS calls (kms/record)':>24}")
        for k in HITS:
            plain = _median_ms(functools.partial(bench.search_plain, k))
            local = _median_ms(functools.partial(bench.search_local_wrap, k))
            bench.kms_calls = 0
            per_kms = _median_ms(functools.partial(bench.search_kms_per_record, k))
            print(f"{f'search, {k} hits':<28}{plain:>10.2f}{local:>15.2f}{per_kms:>15.2f}"
                  f"{bench.kms_calls // REPEATS:>24}")
        counter = iter(range(10**9))
        plain = _median_ms(lambda: bench.admit_plain(next(counter)))
        local = _median_ms(lambda: bench.admit_local_wrap(next(counter)))
        print(f"{'admission (record put)':<28}{plain:>10.2f}{local:>15.2f}{'-':>15}{0:>24}")
    read_us, write_us = _aes_us()
    print(f"AES-GCM per record: unwrap+decrypt {read_us:.1f} µs; key+seal+wrap {write_us:.1f} µs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
