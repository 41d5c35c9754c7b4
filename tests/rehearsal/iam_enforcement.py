"""moto's IAM enforcement, made to judge each request on the resources it names.

moto 5 authenticates every request when ``settings.INITIAL_NO_AUTH_ACTION_COUNT`` is 0
(``moto.core.enable_iam_authentication``; the signature must match an IAM user's key or an
``sts:AssumeRole`` session's) and evaluates the caller's identity policies, but for most
services against the resource ``*`` and the action as the API names it: a statement
scoped to a table ARN never matches ``*``, and ``dynamodb:TransactWriteItems`` is not how
IAM authorizes a transaction. So every request here is expanded into what AWS authorizes:

- DynamoDB: one ``(action, table or index ARN)`` per item of a transaction or batch
  (``TransactWriteItems`` → ``PutItem``/``UpdateItem``/``DeleteItem``/``ConditionCheckItem``
  on each element's table), stream calls on the stream ARN;
- KMS on the key ARN, and a key policy that names the caller's role (the tenant key's
  grants) allows on its own, like AWS; Step Functions on the state machine or execution;
  SQS on the queue (moto's own); Secrets Manager on the secret; EventBridge ``PutEvents``
  on each entry's bus; S3 Vectors on the index; ``lambda:InvokeFunction`` on the function.

Conditions are not evaluated (moto ignores condition keys it is not given; docs/deploy.md
lists what that leaves to a real deploy). Every denial is recorded in ``DENIALS``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import unquote

from moto import settings
from moto.core.authorization import ActionAuthenticatorMixin
from moto.iam.access_control import IAMRequest

DENIALS: list[str] = []
_lock = threading.Lock()
_ORIGINAL = ActionAuthenticatorMixin._authenticate_and_authorize_normal_action

DYNAMO_TRANSACT = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
                   "ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}


def _json_body(response: Any) -> dict[str, Any]:
    raw = getattr(response, "raw_body", None) or getattr(response, "body", None) or b"{}"
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw)
    except (TypeError, ValueError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _dynamodb(service: str, action: str, body: dict[str, Any], region: str,
              account: str) -> list[tuple[str, str]]:
    def table(name: str, index: str | None = None) -> str:
        arn = f"arn:aws:dynamodb:{region}:{account}:table/{name}"
        return f"{arn}/index/{index}" if index else arn

    if action == "TransactWriteItems" or action == "TransactGetItems":
        out = []
        for item in body.get("TransactItems", []):
            for kind, spec in item.items():
                out.append((f"{service}:{DYNAMO_TRANSACT[kind]}", table(spec["TableName"])))
        return out
    if action in ("BatchGetItem", "BatchWriteItem"):
        return [(f"{service}:{action}", table(name)) for name in body.get("RequestItems", {})]
    if "StreamArn" in body:
        return [(f"{service}:{action}", body["StreamArn"])]
    if "ShardIterator" in body:  # GetRecords: the iterator names no ARN moto can give
        return [(f"{service}:{action}", "*")]
    if "TableName" in body:
        return [(f"{service}:{action}", table(body["TableName"], body.get("IndexName")))]
    return [(f"{service}:{action}", "*")]


def _kms_key_arn(key_id: str, region: str, account: str) -> str:
    from moto.backends import get_backend

    backend = get_backend("kms")[account][region]
    try:
        return str(backend.describe_key(backend.get_key_id(key_id)).arn)
    except Exception:
        return "*"


def requested(response: Any, action: str, resource: str) -> list[tuple[str, str]]:
    """The (IAM action, resource ARN) pairs AWS would authorize for this request."""
    service = str(response.headers.get("Authorization", "")).split("Credential=", 1)[-1] \
        .split(",", 1)[0].split("/")[3:4]
    svc = service[0] if service else ""
    region, account = response.region, response.current_account
    body = _json_body(response)
    if svc == "dynamodb":
        return _dynamodb(svc, action, body, region, account)
    if svc == "kms" and "KeyId" in body:
        return [(f"kms:{action}", _kms_key_arn(body["KeyId"], region, account))]
    if svc == "states":
        arn = body.get("stateMachineArn") or body.get("executionArn") or "*"
        return [(f"states:{action}", arn)]
    if svc == "secretsmanager" and "SecretId" in body:
        from moto.backends import get_backend

        secrets = get_backend("secretsmanager")[account][region]
        try:
            arn = secrets.describe_secret(body["SecretId"]).arn
        except Exception:
            arn = "*"
        return [(f"secretsmanager:{action}", arn)]
    if svc == "events" and action == "PutEvents":
        buses = {e.get("EventBusName", "default") for e in body.get("Entries", [])}
        return [("events:PutEvents", bus if bus.startswith("arn:")
                 else f"arn:aws:events:{region}:{account}:event-bus/{bus}") for bus in buses]
    if svc == "s3vectors":
        index = body.get("indexArn") or (
            f"arn:aws:s3vectors:{region}:{account}:bucket/{body['vectorBucketName']}"
            f"/index/{body['indexName']}" if "indexName" in body and "vectorBucketName" in body
            else "*")
        return [(f"s3vectors:{action}", index)]
    if svc == "lambda" and "/invocations" in response.path:
        name = unquote(response.path.rsplit("/", 2)[-2])
        arn = name if name.startswith("arn:") else \
            f"arn:aws:lambda:{region}:{account}:function:{name}"
        return [("lambda:InvokeFunction", arn)]
    return [(f"{svc}:{action}", resource)]


def _key_policy_allows(action: str, key_arn: str, principal_arn: str, account: str,
                       region: str) -> bool:
    """A key-policy statement naming the caller's role allows (AWS needs no IAM grant)."""
    from moto.backends import get_backend

    if not principal_arn.startswith(f"arn:aws:sts::{account}:assumed-role/"):
        return False
    role = principal_arn.split("/")[1]
    role_arn = f"arn:aws:iam::{account}:role/{role}"
    try:
        key = get_backend("kms")[account][region].describe_key(key_arn.rsplit("/", 1)[-1])
        policy = key.policy if isinstance(key.policy, dict) else json.loads(key.policy)
    except Exception:
        return False
    for statement in policy.get("Statement", []):
        actions = statement.get("Action", [])
        actions = [actions] if isinstance(actions, str) else actions
        principals = statement.get("Principal", {}).get("AWS", [])
        principals = [principals] if isinstance(principals, str) else principals
        if statement.get("Effect") == "Allow" and action in actions and role_arn in principals:
            return True
    return False


def _authorize(self: Any, resource: str = "*") -> None:
    if ActionAuthenticatorMixin.request_count < settings.INITIAL_NO_AUTH_ACTION_COUNT:
        ActionAuthenticatorMixin.request_count += 1
        return
    path = self.raw_path + (("?" + self.uri.split("?", 1)[1]) if "?" in self.uri else "")
    # Without a body, moto would sign its parsed parameters as the payload (a bodiless GET,
    # e.g. GetFunctionConfiguration, then never matches): an empty payload is what was signed.
    request = IAMRequest(account_id=self.current_account, method=self.method, path=path,
                         data={} if self.method == "GET" and not self.raw_body else self.data,
                         body=self.raw_body,
                         headers=self.headers,
                         action=self._get_action())
    request.check_signature()
    for action, arn in requested(self, self._get_action(), resource):
        request._action = action
        try:
            request.check_action_permitted(arn)
        except Exception:
            principal = str(request._access_key.arn)
            if action.startswith("kms:") and _key_policy_allows(
                    action, arn, principal, self.current_account, self.region):
                continue
            with _lock:
                DENIALS.append(f"{principal} {action} {arn}")
            raise


@contextmanager
def enforced() -> Iterator[list[str]]:
    """IAM enforcement on for every moto request in this process; yields the denials."""
    ActionAuthenticatorMixin._authenticate_and_authorize_normal_action = _authorize  # type: ignore[method-assign]
    DENIALS.clear()
    previous = (settings.INITIAL_NO_AUTH_ACTION_COUNT, ActionAuthenticatorMixin.request_count)
    settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
    ActionAuthenticatorMixin.request_count = 0
    try:
        yield DENIALS
    finally:
        settings.INITIAL_NO_AUTH_ACTION_COUNT, ActionAuthenticatorMixin.request_count = previous
        ActionAuthenticatorMixin._authenticate_and_authorize_normal_action = _ORIGINAL  # type: ignore[method-assign]
