"""The rehearsal: the synthesized stack stood up in moto, its functions run under their roles.

``Rehearsal`` holds the running stack and the three event sources the template wires, fed
the way AWS feeds them: the main table's stream to the projector (batch size and starting
position from the stack's event source mapping), the confirmation queue to the notifier
(its mapping's batch size, partial batch failures honoured), and the schedule rule's
target input to the expiry sweeper.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
from engram_memory import bootstrap
from engram_memory.adapters.dynamodb.stream_reader import DynamoStreamReader, Position
from engram_memory.local.moto_server import MotoService
from engram_memory.local.queue_pump import lambda_event

from tests.rehearsal import iam_enforcement
from tests.rehearsal.functions import Functions, lambda_and_workflow_stand_ins
from tests.rehearsal.stand_up import StoodUp, stand_up
from tests.rehearsal.synthesis import SynthesizedStack

ACCOUNT = "123456789012"
REGION = "us-east-1"
EVENTS = Path(__file__).resolve().parents[1] / "events"


def admin_session(endpoint_url: str) -> boto3.Session:
    """An IAM user allowed everything: the operator deploying, and the test's own eyes."""
    bootstrap_session = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="x",
                                      region_name=REGION)
    iam = bootstrap_session.client("iam", endpoint_url=endpoint_url)
    name = "rehearsal-operator"
    if name not in {u["UserName"] for u in iam.list_users()["Users"]}:
        iam.create_user(UserName=name)
        iam.put_user_policy(UserName=name, PolicyName="all", PolicyDocument=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
    key = iam.create_access_key(UserName=name)["AccessKey"]
    return boto3.Session(aws_access_key_id=key["AccessKeyId"],
                         aws_secret_access_key=key["SecretAccessKey"], region_name=REGION)


def detach_event_source_mappings() -> None:
    """moto would run the mapped function itself (in Docker): the rehearsal feeds them."""
    from moto.backends import get_backend

    for table in get_backend("dynamodb")[ACCOUNT][REGION].tables.values():
        table.lambda_event_source_mappings.clear()
    for queue in get_backend("sqs")[ACCOUNT][REGION].queues.values():
        queue.lambda_event_source_mappings.clear()


@dataclass
class Rehearsal:
    """The stack in moto and its functions."""

    synthesized: SynthesizedStack
    stood: StoodUp
    admin: boto3.Session
    functions: Functions
    denials: list[str]
    positions: dict[str, Position] = field(default_factory=dict)

    def client(self, service: str) -> Any:
        """An operator's client (allowed everything): the test's own reads."""
        return self.admin.client(service, region_name=REGION)

    def physical(self, cfn_type: str, part: str) -> str:
        """The physical id of the one resource of a type whose logical id has ``part``."""
        [lid] = [lid for lid in self.stood.resources(cfn_type) if part in lid]
        return self.stood.physical[lid]

    def mapping(self, target_part: str) -> dict[str, Any]:
        """The template properties of the event source mapping of one function."""
        [props] = [r["Properties"] for lid, r in
                   self.stood.resources("AWS::Lambda::EventSourceMapping").items()
                   if target_part in json.dumps(r["Properties"]["FunctionName"])]
        return props

    # -- the event sources -------------------------------------------------------------

    def feed_projector(self) -> int:
        """Deliver every new stream record of the main table to the projector, in batches."""
        spec = self.mapping("Projector")
        table = self.physical("AWS::DynamoDB::Table", "MainTable")
        reader = DynamoStreamReader(self.client("dynamodb"), self.client("dynamodbstreams"),
                                    table)
        stream = reader.stream_arn()
        assert stream is not None
        delivered = 0
        for shard in reader.shard_ids(stream):
            key = f"{stream}|{shard}"
            while True:
                start = self.positions.get(key, (spec["StartingPosition"], None))
                records = reader.read(stream, shard, start if start[1] else None,
                                      int(spec["BatchSize"]))
                if not records:
                    break
                answer = self.functions.run("projector", {"Records": records}) or {}
                assert not answer.get("batchItemFailures"), answer
                self.positions[key] = ("AFTER_SEQUENCE_NUMBER",
                                       str(records[-1]["dynamodb"]["SequenceNumber"]))
                delivered += len(records)
        return delivered

    def feed_notifier(self, wait_s: float = 10.0) -> int:
        """Deliver the confirmation queue's messages to the notifier (waits for the first,
        at most ``wait_s``; 0: one receive without waiting)."""
        spec = self.mapping("ConfirmationNotifier")
        url = self.physical("AWS::SQS::Queue", "GateConfirmationQueue")
        sqs = self.client("sqs")
        handled = 0
        deadline = time.monotonic() + wait_s
        while True:
            messages = sqs.receive_message(QueueUrl=url,
                                           MaxNumberOfMessages=int(spec["BatchSize"]),
                                           WaitTimeSeconds=1 if wait_s else 0,
                                           AttributeNames=["All"]).get("Messages", [])
            if not messages:
                if handled or time.monotonic() >= deadline:
                    return handled
                continue
            answer = self.functions.run("confirmation_notifier",
                                        lambda_event(messages, REGION, url)) or {}
            failed = {f["itemIdentifier"] for f in answer.get("batchItemFailures", [])}
            assert not failed, answer
            for message in messages:
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
            handled += len(messages)

    def schedule_event(self) -> dict[str, Any]:
        """What EventBridge delivers to the sweeper's target: its Input, else the event."""
        events = self.client("events")
        rule = self.physical("AWS::Events::Rule", "ExpirySchedule")
        [target] = events.list_targets_by_rule(Rule=rule)["Targets"]
        if "Input" in target:
            return dict(json.loads(target["Input"]))
        arn = events.describe_rule(Name=rule)["Arn"]
        return {"version": "0", "id": "rehearsal", "detail-type": "Scheduled Event",
                "source": "aws.events", "account": ACCOUNT, "region": REGION,
                "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "resources": [arn], "detail": {}}

    def sweep(self) -> Any:
        """The expiry sweeper, on its schedule's input."""
        return self.functions.run("expiry_sweeper", self.schedule_event())

    # -- the HTTP API's two integrations ------------------------------------------------

    def mcp_event(self, body: dict[str, Any], token: str) -> dict[str, Any]:
        """The API Gateway v2 event of one POST /mcp."""
        event: dict[str, Any] = json.loads(
            (EVENTS / "apigw_mcp_modern_tools_call.json").read_text(encoding="utf-8"))
        event["headers"]["authorization"] = f"Bearer {token}"
        event["headers"]["mcp-method"] = body["method"]
        if "name" in body.get("params", {}):
            event["headers"]["mcp-name"] = body["params"]["name"]
        else:
            event["headers"].pop("mcp-name", None)
        event["body"] = json.dumps(body)
        return event

    def call_tool(self, tool: str, arguments: dict[str, Any], token: str) -> dict[str, Any]:
        """One ``tools/call`` through the MCP endpoint function: the result's envelope."""
        template = json.loads(
            (EVENTS / "apigw_mcp_modern_tools_call.json").read_text(encoding="utf-8"))
        body = json.loads(template["body"])
        body["params"]["name"] = f"engram_memory_{tool}"
        body["params"]["arguments"] = arguments
        response = self.functions.run("mcp_endpoint", self.mcp_event(body, token))
        assert response["statusCode"] == 200, response
        answer = json.loads(response["body"])
        result = answer["result"]
        return dict(result.get("structuredContent") or json.loads(result["content"][0]["text"]))

    def host(self, method: str, path: str, token: str,
             body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        """One host route through the host API function."""
        from tests.integration.gate.host import host_event

        response = self.functions.run("host_api", host_event(method, path, token, body))
        return int(response["statusCode"]), json.loads(response["body"])


def without_grant(template: dict[str, Any], function: str, action_prefix: str) -> dict[str, Any]:
    """A copy of the template whose ``function`` role lost every ``action_prefix*`` grant."""
    out = copy.deepcopy(template)
    [role] = [r["Properties"]["Role"]["Fn::GetAtt"][0] for r in out["Resources"].values()
              if r["Type"] == "AWS::Lambda::Function"
              and r["Properties"]["Handler"] == f"functions.{function}.handler.lambda_handler"]
    removed = 0
    for resource in out["Resources"].values():
        if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role} in \
                resource["Properties"]["Roles"]:
            statements = resource["Properties"]["PolicyDocument"]["Statement"]
            kept = []
            for statement in statements:
                actions = statement["Action"] if isinstance(statement["Action"], list) \
                    else [statement["Action"]]
                left = [a for a in actions if not a.startswith(action_prefix)]
                removed += len(actions) - len(left)
                if left:
                    kept.append({**statement, "Action": left})
            resource["Properties"]["PolicyDocument"]["Statement"] = kept
    assert removed, (function, action_prefix)
    return out


@contextmanager
def rehearse(synthesized: SynthesizedStack, moto: MotoService,
             template: dict[str, Any] | None = None) -> Iterator[Rehearsal]:
    """Stand the stack up on a clean moto and run it with IAM enforced; torn down after."""
    from tests.rehearsal.moto_fixes import after_stand_up

    _reset_moto(moto)
    admin = admin_session(moto.url)
    stood = stand_up(admin, template or synthesized.template, synthesized.stack_name,
                     REGION, ACCOUNT)
    after_stand_up(admin, stood)
    detach_event_source_mappings()
    functions = Functions(stood, admin, moto.url)
    [gate_role] = [lid for lid in stood.resources("AWS::IAM::Role") if "GateRole" in lid]
    gate_role_arn = admin.client("iam").get_role(RoleName=stood.physical[gate_role])[
        "Role"]["Arn"]
    with ExitStack() as stack:
        stack.enter_context(lambda_and_workflow_stand_ins(functions, gate_role_arn, admin))
        denials = stack.enter_context(iam_enforcement.enforced())
        running = Rehearsal(synthesized, stood, admin, functions, denials)
        try:
            yield running
        finally:
            _end_executions(running)
    bootstrap.reset()


def _end_executions(rehearsal: Rehearsal) -> None:
    """End every gate execution still running, so none outlives this stack.

    An approved confirmation waits out its window (30 s) and then writes CONF#, and a
    pending one expires on its own: left running, they would call the next rehearsal's moto
    with this stack's deleted role and be recorded there as denials. StopExecution
    interrupts a Wait; a task token wait ignores it, so those are failed by their token.
    """
    states = rehearsal.client("stepfunctions")
    machines = [m["stateMachineArn"] for m in states.list_state_machines()["stateMachines"]]
    main = rehearsal.physical("AWS::DynamoDB::Table", "MainTable")
    for item in rehearsal.client("dynamodb").scan(TableName=main)["Items"]:
        if "task_token" in item and item.get("state", {}).get("S") == "awaiting_decision":
            with suppress(Exception):  # already decided or timed out: nothing to end
                states.send_task_failure(taskToken=item["task_token"]["S"],
                                         error="RehearsalOver", cause="teardown")
    deadline = time.monotonic() + 30
    for machine in machines:
        while time.monotonic() < deadline:
            left = states.list_executions(stateMachineArn=machine,
                                          statusFilter="RUNNING")["executions"]
            if not left:
                break
            for execution in left:
                with suppress(Exception):
                    states.stop_execution(executionArn=execution["executionArn"])
            time.sleep(0.2)


def _reset_moto(moto: MotoService) -> None:
    import urllib.request

    request = urllib.request.Request(  # noqa: S310 - the loopback moto URL
        moto.url + "/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - loopback
        response.read()
    request = urllib.request.Request(  # noqa: S310 - the loopback moto URL
        moto.url + "/moto-api/config", method="POST",
        data=json.dumps({"stepfunctions": {"execute_state_machine": True}}).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
        response.read()
