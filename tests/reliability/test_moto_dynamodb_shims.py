"""The local service's moto shims change costs and concurrency, not answers.

Same outcomes as moto as it ships, for one thread (engram_memory.local.moto_dynamodb).

The shims patch moto process-wide, so the scenario runs in a child interpreter, once
with the shims and once without, and both must print the same observations.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

SCENARIO = r"""
import json, sys
import boto3
from botocore.exceptions import ClientError
from moto import mock_aws

if sys.argv[1] == "shimmed":
    from engram_memory.local.moto_dynamodb import prepare_moto_dynamodb
    prepare_moto_dynamodb()

seen = []
with mock_aws():
    db = boto3.client("dynamodb", region_name="us-east-1")
    db.create_table(TableName="t", BillingMode="PAY_PER_REQUEST",
                    KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                               {"AttributeName": "sk", "KeyType": "RANGE"}],
                    AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                          {"AttributeName": "sk", "AttributeType": "S"}],
                    StreamSpecification={"StreamEnabled": True,
                                         "StreamViewType": "NEW_AND_OLD_IMAGES"})
    def put(pk, sk, **cond):
        return {"Put": {"TableName": "t", "Item": {"pk": {"S": pk}, "sk": {"S": sk}}, **cond}}
    absent = {"ConditionExpression": "attribute_not_exists(pk)"}
    for n in range(30):
        db.transact_write_items(TransactItems=[put(f"P{n % 3}", f"{n:03d}", **absent)])
    def attempt(items):
        try:
            db.transact_write_items(TransactItems=items)
            return "ok"
        except ClientError as error:
            reasons = error.response.get("CancellationReasons", [])
            return [error.response["Error"]["Code"], [r.get("Code") for r in reasons],
                    [[r.get("Message"), r.get("Item")] for r in reasons]]
    # A failing condition in the second element: nothing of the first one may land.
    seen.append(attempt([put("P9", "new", **absent), put("P0", "000", **absent)]))
    seen.append(attempt([put("P0", "a"), put("P0", "a")]))  # the same item twice
    seen.append(attempt([{"ConditionCheck": {"TableName": "t",
        "Key": {"pk": {"S": "P1"}, "sk": {"S": "001"}},
        "ConditionExpression": "attribute_exists(pk)"}}, put("P9", "other")]))
    seen.append(attempt([{"Update": {"TableName": "t",
        "Key": {"pk": {"S": "P2"}, "sk": {"S": "002"}},
        "UpdateExpression": "SET v = :v", "ConditionExpression": "attribute_exists(pk)",
        "ExpressionAttributeValues": {":v": {"N": "7"}}}}]))
    seen.append(attempt([put("P9", "third", **absent), {"Update": {"TableName": "t",
        "Key": {"pk": {"S": "P1"}, "sk": {"S": "004"}}, "UpdateExpression": "SET v = :v",
        "ConditionExpression": "attribute_not_exists(pk)",
        "ExpressionAttributeValues": {":v": {"N": "1"}},
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}}]))
    for forward in (True, False):
        pages, start = [], None
        while True:
            args = {"TableName": "t", "KeyConditionExpression": "pk = :p",
                    "ExpressionAttributeValues": {":p": {"S": "P1"}}, "Limit": 4,
                    "ScanIndexForward": forward}
            if start:
                args["ExclusiveStartKey"] = start
            page = db.query(**args)
            pages.append([i["sk"]["S"] for i in page["Items"]])
            start = page.get("LastEvaluatedKey")
            if not start:
                break
        seen.append(pages)
    seen.append(db.query(TableName="t", KeyConditionExpression="pk = :p AND sk > :s",
                         ExpressionAttributeValues={":p": {"S": "P2"}, ":s": {"S": "020"}}
                         )["Count"])
    seen.append(sorted((i["pk"]["S"], i["sk"]["S"], i.get("v", {}).get("N"))
                       for i in db.scan(TableName="t")["Items"]))
    streams = boto3.client("dynamodbstreams", region_name="us-east-1")
    arn = db.describe_table(TableName="t")["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"],
                                          ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
    records = streams.get_records(ShardIterator=iterator, Limit=1000)["Records"]
    seen.append([(r["eventName"], r["dynamodb"]["Keys"]["sk"]["S"]) for r in records])
    for low, high, forward, start in (
            ("004", "016", False, None), ("", "011", False, None), ("030", "040", False, None),
            ("016", "016", False, None), ("004", "016", True, None), ("004", "007", True, None),
            ("010", "013", False, None), ("025", "040", True, None), ("", "004", False, None),
            ("004", "016", True, "007"), ("004", "016", False, "013"), ("004", "013", True, "007")):
        # A posting write's read (the two highest keys in a range, descending), other
        # directions, exact-limit pages, and later pages from a start key.
        args = {"TableName": "t",
                "KeyConditionExpression": "pk = :p AND sk BETWEEN :low AND :high",
                "ExpressionAttributeValues": {":p": {"S": "P1"}, ":low": {"S": low or "0"},
                                              ":high": {"S": high}},
                "ScanIndexForward": forward, "Limit": 2}
        if start:
            args["ExclusiveStartKey"] = {"pk": {"S": "P1"}, "sk": {"S": start}}
        page = db.query(**args)
        seen.append([[i["sk"]["S"] for i in page["Items"]],
                     page.get("LastEvaluatedKey", {}).get("sk", {}).get("S")])
    # Keys deleted and added after the partition was read (the shim's key order must follow),
    # by a delete, a put and a transaction, then the same reads again.
    db.delete_item(TableName="t", Key={"pk": {"S": "P1"}, "sk": {"S": "007"}})
    db.delete_item(TableName="t", Key={"pk": {"S": "P1"}, "sk": {"S": "008"}})  # absent
    db.put_item(TableName="t", Item={"pk": {"S": "P1"}, "sk": {"S": "0085"}})
    db.put_item(TableName="t", Item={"pk": {"S": "P1"}, "sk": {"S": "010"}, "v": {"N": "2"}})
    db.transact_write_items(TransactItems=[put("P1", "017"), {"Delete": {"TableName": "t",
        "Key": {"pk": {"S": "P1"}, "sk": {"S": "013"}}}}])
    for low, high, forward, limit in (("004", "016", False, 2), ("004", "016", True, 2),
                                      ("008", "011", True, 5), ("0", "999", False, 3)):
        page = db.query(TableName="t",
                        KeyConditionExpression="pk = :p AND sk BETWEEN :low AND :high",
                        ExpressionAttributeValues={":p": {"S": "P1"}, ":low": {"S": low},
                                                   ":high": {"S": high}},
                        ScanIndexForward=forward, Limit=limit)
        seen.append([[(i["sk"]["S"], i.get("v", {}).get("N")) for i in page["Items"]],
                     page.get("LastEvaluatedKey", {}).get("sk", {}).get("S")])
    seen.append([i["sk"]["S"] for i in db.query(
        TableName="t", KeyConditionExpression="pk = :p", Limit=3, ScanIndexForward=False,
        ExpressionAttributeValues={":p": {"S": "P1"}})["Items"]])
print(json.dumps(seen))
"""


def observe(mode: str, scenario: str = SCENARIO) -> object:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x",
               AWS_ACCOUNT_ID_ENDPOINT_MODE="disabled")
    done = subprocess.run([sys.executable, "-c", scenario, mode],
                          env=env, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)


def test_shimmed_moto_answers_every_transaction_and_query_as_moto_does() -> None:
    shimmed, plain = observe("shimmed"), observe("plain")
    assert shimmed == plain
    # And the scenario is not vacuous: it saw a cancellation, a rejected duplicate, two
    # successes, pages in both directions, and a table without the cancelled writes.
    assert isinstance(plain, list)
    assert plain[0][0] == "TransactionCanceledException"
    assert plain[0][1] == ["None", "ConditionalCheckFailed"]
    assert plain[2] == "ok"
    assert plain[3] == "ok"
    assert plain[4][1] == ["None", "ConditionalCheckFailed"]
    assert plain[4][2][1][1] == {"pk": {"S": "P1"}, "sk": {"S": "004"}}  # ALL_OLD
    assert plain[5][0] == ["001", "004", "007", "010"]
    assert plain[6][0] == ["028", "025", "022", "019"]
    rows = [tuple(row) for row in plain[8]]
    assert ("P9", "new", None) not in rows
    assert ("P9", "third", None) not in rows
    assert ("P2", "002", "7") in rows
    # The stream saw the 30 puts, the committed ConditionCheck + put and the update: no
    # record of any cancelled write.
    assert [sk for _, sk in plain[9]].count("third") == 0
    assert len(plain[9]) == 32
    # BETWEEN, Limit 2, both directions: the items and where the next page would start.
    assert plain[10:16] == [[["016", "013"], "013"], [["010", "007"], "007"], [[], None],
                            [["016"], None], [["004", "007"], "007"], [["004", "007"], "007"]]
    assert plain[16:19] == [[["013", "010"], "010"], [["025", "028"], None],
                            [["004", "001"], None]]
    assert [items for items, _ in plain[19:22]] == [["010", "013"], ["010", "007"],
                                                    ["010", "013"]]
    # After deletes and puts of keys (007, 013 gone; 0085, 017 new; 010 rewritten).
    assert plain[22:] == [[[["016", None], ["010", "2"]], "010"],
                          [[["004", None], ["0085", None]], "0085"],
                          [[["0085", None], ["010", "2"]], None],
                          [[["028", None], ["025", None], ["022", None]], "022"],
                          ["028", "025", "022"]]


READS_SCENARIO = r"""
import json, sys
import boto3
import moto.dynamodb.responses as responses
from botocore.exceptions import ClientError
from moto import mock_aws

if sys.argv[1] == "shimmed":
    from engram_memory.local.moto_dynamodb import prepare_moto_dynamodb
    prepare_moto_dynamodb()

two_passes = [0]
moto_copy = responses.dynamo_to_dict
def counted(value):
    two_passes[0] += 1
    return moto_copy(value)
responses.dynamo_to_dict = counted

wire = []
def received(response_dict, **_):
    if response_dict is not None:
        wire.append([response_dict["status_code"], json.loads(response_dict["body"] or b"{}")])

key = lambda sk: {"pk": {"S": "P"}, "sk": {"S": sk}}
with mock_aws():
    db = boto3.client("dynamodb", region_name="us-east-1")
    for table in ("r", "r2"):
        db.create_table(TableName=table, BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                   {"AttributeName": "sk", "KeyType": "RANGE"}],
                        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                              {"AttributeName": "sk", "AttributeType": "S"}])
    for n in range(5):
        db.put_item(TableName="r", Item={**key(f"{n:03d}"),
            "b": {"B": bytes(range(256)) * (40 * n + 1)},  # up to a posting block's size
            "bs": {"BS": [b"\x00", bytes([n, 255])]}, "n": {"N": f"-12.5{n}"},
            "ns": {"NS": ["1", "2.5"]}, "ss": {"SS": ["a", "\u00e9"]}, "t": {"BOOL": True},
            "f": {"BOOL": False}, "z": {"NULL": True}, "e": {"S": ""}, "l": {"L": []},
            "m": {"M": {"inner": {"B": b"\x01\x02"}, "deep": {"L": [
                {"S": "x"}, {"N": "3"}, {"M": {}}, {"BS": [b"\x07"]}]}}},
            "CapacityUnits": {"N": "7"}})
    db.put_item(TableName="r2", Item={**key("001"), "v": {"S": "other table"}})
    db.meta.events.register("response-received.dynamodb", received)
    before = two_passes[0]
    db.get_item(TableName="r", Key=key("001"))
    db.get_item(TableName="r", Key=key("missing"))
    db.get_item(TableName="r", Key=key("002"), ProjectionExpression="#b, m.inner, CapacityUnits",
                ExpressionAttributeNames={"#b": "b"}, ReturnConsumedCapacity="TOTAL")
    page = db.query(TableName="r", KeyConditionExpression="pk = :p",
                    ExpressionAttributeValues={":p": {"S": "P"}}, Limit=2)
    db.query(TableName="r", KeyConditionExpression="pk = :p", Limit=2,
             ExpressionAttributeValues={":p": {"S": "P"}},
             ExclusiveStartKey=page["LastEvaluatedKey"], ReturnConsumedCapacity="INDEXES")
    db.query(TableName="r", KeyConditionExpression="pk = :p", Select="COUNT",
             ExpressionAttributeValues={":p": {"S": "P"}})
    db.query(TableName="r", KeyConditionExpression="pk = :p", ScanIndexForward=False,
             ExpressionAttributeValues={":p": {"S": "P"}}, ProjectionExpression="b",
             ConsistentRead=True)
    db.query(TableName="r", KeyConditionExpression="pk = :p", ProjectionExpression=
             "#b, e, t, z, nothere", ExpressionAttributeNames={"#b": "b"},
             ExpressionAttributeValues={":p": {"S": "P"}})
    # (moto projects a set through a Python set: its order varies by process, not compared)
    db.query(TableName="r", KeyConditionExpression="pk = :p", ProjectionExpression="n, b, l",
             ExpressionAttributeValues={":p": {"S": "P"}})
    db.scan(TableName="r", Limit=3, ReturnConsumedCapacity="TOTAL")
    db.batch_get_item(RequestItems={
        "r": {"Keys": [key("001"), key("004"), key("missing")]},
        "r2": {"Keys": [key("001")], "ConsistentRead": True, "ProjectionExpression": "v"}})
    reads = two_passes[0] - before
    db.put_item(TableName="r", Item={**key("001"), "v": {"B": b"\x09"}}, ReturnValues="ALL_OLD")
    db.update_item(TableName="r", Key=key("002"), UpdateExpression="SET w = :w",
                   ExpressionAttributeValues={":w": {"BS": [b"\x0a"]}}, ReturnValues="ALL_NEW")
    # A partition's kept order follows puts that replace an item and deletes.
    for forward in (True, False):
        db.query(TableName="r", KeyConditionExpression="pk = :p", Limit=3,
                 ExpressionAttributeValues={":p": {"S": "P"}}, ScanIndexForward=forward)
    db.delete_item(TableName="r", Key=key("000"))
    db.put_item(TableName="r", Item={**key("000a"), "v": {"S": "new"}})
    for forward in (True, False):
        db.query(TableName="r", KeyConditionExpression="pk = :p", Limit=3,
                 ExpressionAttributeValues={":p": {"S": "P"}}, ScanIndexForward=forward)
    try:
        db.get_item(TableName="absent", Key=key("001"))
    except ClientError:
        pass
print(json.dumps({"wire": wire, "two_pass_reads": reads}, sort_keys=True))
"""


def test_shimmed_moto_writes_every_read_answer_as_moto_does() -> None:
    shimmed, plain = observe("shimmed", READS_SCENARIO), observe("plain", READS_SCENARIO)
    assert isinstance(shimmed, dict)
    assert isinstance(plain, dict)
    # The same JSON on the wire (numbers' int/float kept apart), for every read, the
    # writes' answers after them and an error.
    assert json.dumps(shimmed["wire"], sort_keys=True) == json.dumps(plain["wire"], sort_keys=True)
    # ... and the reads really took the one-pass writer, moto's copy only as it ships.
    assert shimmed["two_pass_reads"] == 0
    assert plain["two_pass_reads"] == 11
    answers = [body for _, body in plain["wire"]]
    assert len(answers) == 20
    assert set(answers[7]["Items"][0]) == {"b", "e", "t", "z"}  # only the attributes named
    assert answers[13]["Items"][1]["v"] == {"B": "CQ=="}  # the replaced item, as it is now
    assert [i["sk"]["S"] for i in answers[17]["Items"]] == ["000a", "001", "002"]
    assert len(answers[0]["Item"]["b"]["B"]) > 50  # a binary attribute, base64
    assert answers[1] == {}  # a missing item
    assert answers[2]["ConsumedCapacity"] == {"TableName": "r", "CapacityUnits": 0.5}
    assert "LastEvaluatedKey" in answers[3]
    assert answers[5]["Count"] == 5
    assert "Items" not in answers[5]
    assert set(answers[10]["Responses"]) == {"r", "r2"}
    assert plain["wire"][-1][0] == 400
