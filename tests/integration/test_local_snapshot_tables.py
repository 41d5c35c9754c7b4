"""The ``--data-dir`` snapshot's table dump: one pass over moto's backend, exact round trip.

(The whole restart, key material included, runs in tests/e2e/test_cli_service.py.)
"""

from __future__ import annotations

import json

from engram_memory.local.moto_server import MOTO_ACCOUNT_ID
from engram_memory.local.moto_snapshot import dump_tables, load_tables

from tests.integration.conftest import REGION, AwsEnv

ITEMS = [
    {"pk": {"S": "SCOPE#t#w"}, "sk": {"S": f"CAND#c{n:03d}#BLOB#0000"},
     "ct": {"B": bytes([n % 256, 0, 255]) * 7}, "n": {"N": str(n)},
     "m": {"M": {"nested": {"B": b"\x00\x01"}, "l": {"L": [{"S": "x"}, {"N": "1.5"}]}}},
     "ss": {"SS": ["a", "b"]}, "bs": {"BS": [b"\x02", b"\x03"]}, "flag": {"BOOL": True},
     "none": {"NULL": True}}
    for n in range(300)
]


def test_a_dump_survives_json_and_reloads_every_item_exactly(aws: AwsEnv) -> None:
    main = aws.settings.table_name
    for item in ITEMS:
        aws.dynamodb.put_item(TableName=main, Item=item)
    dumped = json.loads(json.dumps(dump_tables(MOTO_ACCOUNT_ID, REGION, [main])))
    assert len(dumped[main]) == len(ITEMS)
    for item in ITEMS:
        aws.dynamodb.delete_item(TableName=main, Key={"pk": item["pk"], "sk": item["sk"]})
    assert aws.scan(main) == []

    assert load_tables(MOTO_ACCOUNT_ID, REGION, dumped) == len(ITEMS)

    def key(item: dict) -> str:
        return str(item["sk"]["S"])

    reloaded = sorted(aws.scan(main), key=key)
    assert reloaded == sorted(ITEMS, key=key)
