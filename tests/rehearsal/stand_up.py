"""Stand the synthesized stack up in moto from the template itself.

moto's CloudFormation creates every resource type the stack uses except a few
(``READER_TYPES``); a ``Ref``/``Fn::GetAtt`` on any of those fails the whole
``create_stack``. So this reader creates those from their template properties (never from
a second description of them), substitutes their ``Ref``/``Fn::GetAtt`` values into the
template, drops the CDK bootstrap rule and parameter (and the offline-synthesis rule), puts
an object where each Lambda code asset key points in the CDK asset bucket, and
``create_stack``s the rest. Resources whose properties need a stack resource (the vector
bucket's KMS key, a queue's policy) are created right after, from the same properties.
"""

from __future__ import annotations

import copy
import io
import json
import secrets
import string
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

VECTOR_BUCKET = "AWS::S3Vectors::VectorBucket"
VECTOR_INDEX = "AWS::S3Vectors::Index"
QUEUE_POLICY = "AWS::SQS::QueuePolicy"
SECRET = "AWS::SecretsManager::Secret"
# moto creates an event bus from the template but resolves a Ref to it into its Python
# object (a function's environment then cannot be serialized): stood up here too.
EVENT_BUS = "AWS::Events::EventBus"
# moto's CloudFormation puts a state machine where moto's executing Step Functions (the
# ASL interpreter enabled by ``execute_state_machine``) never looks, and ignores
# ``DefinitionSubstitutions``: stood up here from its properties, substitutions applied.
STATE_MACHINE = "AWS::StepFunctions::StateMachine"
READER_TYPES = (SECRET, EVENT_BUS, VECTOR_BUCKET, VECTOR_INDEX, QUEUE_POLICY, STATE_MACHINE)
BOOTSTRAP_QUALIFIER = "hnb659fds"


class UnsupportedTemplate(RuntimeError):
    """The template uses something neither moto nor this reader stands up."""


@dataclass
class StoodUp:
    """The stack in moto: its name, outputs, and each resource's physical id."""

    stack_name: str
    region: str
    account: str
    template: dict[str, Any]
    physical: dict[str, str]
    outputs: dict[str, str]
    by_reader: dict[str, str] = field(default_factory=dict)  # logical id -> type

    def resources(self, cfn_type: str) -> dict[str, dict[str, Any]]:
        """Template resources of one type, by logical id."""
        return {lid: r for lid, r in self.template["Resources"].items()
                if r["Type"] == cfn_type}


def _walk(value: Any, replace: Callable[[dict[str, Any]], Any]) -> Any:
    if isinstance(value, dict):
        replaced = replace(value)
        if replaced is not value:
            return replaced
        return {k: _walk(v, replace) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, replace) for v in value]
    return value


def _reference(value: dict[str, Any]) -> tuple[str, str | None] | None:
    """(logical id, attribute or None for Ref) when ``value`` is a Ref/GetAtt."""
    if len(value) != 1:
        return None
    if isinstance(value.get("Ref"), str):
        return value["Ref"], None
    att = value.get("Fn::GetAtt")
    if isinstance(att, list) and len(att) == 2:
        return str(att[0]), str(att[1])
    return None


def substitute(template: dict[str, Any], values: dict[tuple[str, str | None], Any]) -> Any:
    """The template with each known Ref/GetAtt replaced by its value."""

    def replace(node: dict[str, Any]) -> Any:
        ref = _reference(node)
        return values[ref] if ref is not None and ref in values else node

    return _walk(template, replace)


def references_to(template: Any, logical_ids: set[str]) -> set[tuple[str, str | None]]:
    """Every Ref/GetAtt in ``template`` that names one of ``logical_ids``."""
    found: set[tuple[str, str | None]] = set()

    def collect(node: dict[str, Any]) -> Any:
        ref = _reference(node)
        if ref is not None and ref[0] in logical_ids:
            found.add(ref)
        return node

    _walk(template, collect)
    return found


def _generated_secret(spec: dict[str, Any]) -> str:
    alphabet = string.ascii_letters + string.digits
    if not spec.get("ExcludePunctuation"):
        alphabet += "!#$%&()*+,-./:;<=>?@[]^_{|}~"
    if spec.get("IncludeSpace"):
        alphabet += " "
    return "".join(secrets.choice(alphabet) for _ in range(int(spec.get("PasswordLength", 32))))


def _code_zip() -> bytes:
    # The code asset itself is not run from the bucket (the handlers run in process from
    # this checkout, which is what the asset copies); moto only needs an object there.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("README", "rehearsal stand-in for the CDK code asset\n")
    return buffer.getvalue()


class Reader:
    """Creates the resources moto's CloudFormation lacks, from their template properties."""

    def __init__(self, session: Any, region: str, account: str, stack_name: str) -> None:
        """Clients from ``session`` (an administrator's, in the rehearsal account)."""
        self.session = session
        self.region = region
        self.account = account
        self.stack_name = stack_name

    def client(self, service: str) -> Any:
        """A client of the rehearsal account."""
        return self.session.client(service, region_name=self.region)

    def before_stack(self, lid: str, resource: dict[str, Any]) -> dict[str, str | None]:
        """Create what needs no stack resource; its Ref/GetAtt values (None: Ref)."""
        props = resource.get("Properties", {})
        if resource["Type"] == SECRET:
            value = (props["SecretString"] if "SecretString" in props
                     else _generated_secret(props.get("GenerateSecretString", {})))
            kwargs = {"Name": props.get("Name", f"{self.stack_name}-{lid}"),
                      "SecretString": value}
            if "Description" in props:
                kwargs["Description"] = props["Description"]
            if "KmsKeyId" in props:
                raise UnsupportedTemplate(f"{lid}: a secret's KmsKeyId is not stood up")
            arn = self.client("secretsmanager").create_secret(**kwargs)["ARN"]
            return {"": arn, "Id": arn}
        if resource["Type"] == EVENT_BUS:
            if set(props) - {"Name", "Description"}:
                raise UnsupportedTemplate(f"{lid}: event bus properties {sorted(props)}")
            kwargs = {"Name": props["Name"]}
            if "Description" in props:
                kwargs["Description"] = props["Description"]
            arn = self.client("events").create_event_bus(**kwargs)["EventBusArn"]
            return {"": props["Name"], "Arn": arn, "Name": props["Name"]}
        if resource["Type"] == STATE_MACHINE:
            name = props.get("StateMachineName", f"{self.stack_name}-{lid}")
            arn = f"arn:aws:states:{self.region}:{self.account}:stateMachine:{name}"
            return {"": arn, "Arn": arn, "Name": name}
        if resource["Type"] == VECTOR_BUCKET:
            arn = (f"arn:aws:s3vectors:{self.region}:{self.account}:bucket/"
                   f"{props['VectorBucketName']}")
            return {"": arn, "VectorBucketArn": arn}
        if resource["Type"] == VECTOR_INDEX:
            arn = (f"arn:aws:s3vectors:{self.region}:{self.account}:bucket/"
                   f"{props['VectorBucketName']}/index/{props['IndexName']}")
            return {"": arn, "IndexArn": arn}
        return {}

    def after_stack(self, lid: str, resource: dict[str, Any],
                    resolve: Callable[[Any], Any]) -> None:
        """Create what needs stack resources (already resolved by ``resolve``)."""
        props = resolve(resource.get("Properties", {}))
        kind = resource["Type"]
        if kind == VECTOR_BUCKET:
            kwargs: dict[str, Any] = {"vectorBucketName": props["VectorBucketName"]}
            encryption = props.get("EncryptionConfiguration")
            if encryption:
                kwargs["encryptionConfiguration"] = {
                    "sseType": encryption["SseType"], "kmsKeyArn": encryption["KmsKeyArn"]}
            self.client("s3vectors").create_vector_bucket(**kwargs)
        elif kind == VECTOR_INDEX:
            self.client("s3vectors").create_index(
                vectorBucketName=props["VectorBucketName"], indexName=props["IndexName"],
                dataType=props["DataType"], dimension=int(props["Dimension"]),
                distanceMetric=props["DistanceMetric"])
        elif kind == STATE_MACHINE:
            definition = props["DefinitionString"]
            for key, value in props.get("DefinitionSubstitutions", {}).items():
                definition = definition.replace("${" + key + "}", str(value))
            kwargs = {"name": props.get("StateMachineName", f"{self.stack_name}-{lid}"),
                      "definition": definition, "roleArn": props["RoleArn"],
                      "type": props.get("StateMachineType", "STANDARD")}
            if "LoggingConfiguration" in props:
                kwargs["loggingConfiguration"] = _camel(props["LoggingConfiguration"])
            if "TracingConfiguration" in props:
                kwargs["tracingConfiguration"] = _camel(props["TracingConfiguration"])
            self.client("stepfunctions").create_state_machine(**kwargs)
        elif kind == QUEUE_POLICY:
            for url in props["Queues"]:
                self.client("sqs").set_queue_attributes(
                    QueueUrl=url, Attributes={"Policy": json.dumps(props["PolicyDocument"])})


def _camel(value: Any) -> Any:
    """CloudFormation's PascalCase property names as the Step Functions API's camelCase."""
    if isinstance(value, dict):
        return {k[:1].lower() + k[1:]: _camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def _upload_code_assets(session: Any, template: dict[str, Any], region: str,
                        account: str) -> None:
    s3 = session.client("s3", region_name=region)
    bucket = f"cdk-{BOOTSTRAP_QUALIFIER}-assets-{account}-{region}"
    s3.create_bucket(Bucket=bucket)
    for resource in template["Resources"].values():
        code = resource.get("Properties", {}).get("Code", {}) \
            if resource["Type"] == "AWS::Lambda::Function" else {}
        if "S3Key" in code:
            s3.put_object(Bucket=bucket, Key=code["S3Key"], Body=_code_zip())


def without_bootstrap(template: dict[str, Any]) -> dict[str, Any]:
    """The template less the CDK bootstrap check and the offline-synthesis rule.

    Both are ``Rules`` (and the SSM-typed ``BootstrapVersion`` parameter): deploy-time
    assertions about the account, not resources.
    """
    out = copy.deepcopy(template)
    out.pop("Rules", None)
    params = {k: v for k, v in out.get("Parameters", {}).items()
              if not str(v.get("Type", "")).startswith("AWS::SSM::Parameter::Value")}
    if params:
        out["Parameters"] = params
    else:
        out.pop("Parameters", None)
    return out


def stand_up(session: Any, template: dict[str, Any], stack_name: str, region: str,
             account: str) -> StoodUp:
    """Create the whole stack in moto (administrator ``session``); see the module doc."""
    body = without_bootstrap(template)
    resources = body["Resources"]
    reader = Reader(session, region, account, stack_name)
    by_reader = {lid: r["Type"] for lid, r in resources.items() if r["Type"] in READER_TYPES}
    values: dict[tuple[str, str | None], Any] = {}
    for lid in sorted(by_reader, key=lambda x: READER_TYPES.index(by_reader[x])):
        for attr, value in reader.before_stack(lid, resources[lid]).items():
            values[(lid, attr or None)] = value
    rest = {lid: r for lid, r in resources.items() if lid not in by_reader}
    for resource in rest.values():
        depends = resource.get("DependsOn")
        if depends:
            kept = [d for d in ([depends] if isinstance(depends, str) else depends)
                    if d not in by_reader]
            if kept:
                resource["DependsOn"] = kept
            else:
                resource.pop("DependsOn")
    body["Resources"] = rest
    missing = references_to(body, set(by_reader)) - set(values)
    if missing:
        raise UnsupportedTemplate(f"no stand-in value for {sorted(map(str, missing))}")
    body = substitute(body, values)
    _upload_code_assets(session, body, region, account)
    cfn = session.client("cloudformation", region_name=region)
    cfn.create_stack(StackName=stack_name, TemplateBody=json.dumps(body),
                     Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"])
    physical = {r["LogicalResourceId"]: r["PhysicalResourceId"]
                for r in _stack_resources(cfn, stack_name)}
    resolve = Resolver(session, region, account, template, physical, values)
    for lid in sorted(by_reader, key=lambda x: READER_TYPES.index(by_reader[x])):
        reader.after_stack(lid, resources[lid], resolve)
    [stack] = cfn.describe_stacks(StackName=stack_name)["Stacks"]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
    return StoodUp(stack_name, region, account, template, physical, outputs, by_reader)


def _stack_resources(cfn: Any, stack_name: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    kwargs = {"StackName": stack_name}
    while True:
        page = cfn.list_stack_resources(**kwargs)
        out += [r for r in page["StackResourceSummaries"]
                if r.get("LogicalResourceId") and r.get("PhysicalResourceId")]
        if not page.get("NextToken"):
            return out
        kwargs["NextToken"] = page["NextToken"]


class Resolver:
    """Ref/GetAtt (and Fn::Join) values of the created stack, for what is made after it."""

    def __init__(self, session: Any, region: str, account: str, template: dict[str, Any],
                 physical: dict[str, str], known: dict[tuple[str, str | None], Any]) -> None:
        """Resolve against ``physical`` ids (and the reader's own ``known`` values)."""
        self.session = session
        self.region = region
        self.account = account
        self.types = {lid: r["Type"] for lid, r in template["Resources"].items()}
        self.physical = physical
        self.known = known

    def value(self, lid: str, attr: str | None) -> Any:
        """One Ref (attr None) or GetAtt value."""
        pseudo = {"AWS::AccountId": self.account, "AWS::Partition": "aws",
                  "AWS::Region": self.region, "AWS::URLSuffix": "amazonaws.com"}
        if attr is None and lid in pseudo:
            return pseudo[lid]
        if (lid, attr) in self.known:
            return self.known[(lid, attr)]
        kind, pid = self.types[lid], self.physical[lid]
        if attr is None:
            return pid
        if (kind, attr) == ("AWS::KMS::Key", "Arn"):
            return f"arn:aws:kms:{self.region}:{self.account}:key/{pid}"
        if (kind, attr) == ("AWS::Logs::LogGroup", "Arn"):
            return f"arn:aws:logs:{self.region}:{self.account}:log-group:{pid}:*"
        if (kind, attr) == ("AWS::IAM::Role", "Arn"):
            iam = self.session.client("iam", region_name=self.region)
            return iam.get_role(RoleName=pid)["Role"]["Arn"]
        if (kind, attr) == ("AWS::SQS::Queue", "Arn"):
            sqs = self.session.client("sqs", region_name=self.region)
            return sqs.get_queue_attributes(QueueUrl=pid, AttributeNames=["QueueArn"])[
                "Attributes"]["QueueArn"]
        raise UnsupportedTemplate(f"cannot resolve {lid}.{attr}")

    def __call__(self, value: Any) -> Any:
        """``value`` with every Ref/GetAtt resolved and every Fn::Join joined."""

        def replace(node: dict[str, Any]) -> Any:
            if set(node) == {"Fn::Join"}:
                sep, parts = node["Fn::Join"]
                return sep.join(str(self(p)) for p in parts)
            ref = _reference(node)
            return node if ref is None else self.value(*ref)

        return _walk(value, replace)
