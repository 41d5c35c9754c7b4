"""Each function of the stack, run in process as Lambda would run it.

A function runs its ``functions/<name>/handler.py`` with exactly the environment variables
its ``AWS::Lambda::Function`` got in moto (the template's, resolved by moto's
CloudFormation) plus what the Lambda runtime itself sets (region, the credentials of the
function's own role from ``sts:AssumeRole``), with a fresh boto3 default session and the
composition roots reset, so nothing of another function's wiring or credentials carries
over. One function runs at a time; a ``lambda:Invoke`` it makes reaches moto (which
authorizes it) and moto's Lambda backend hands the call back here.

moto does not execute Lambda code without Docker, does not implement QueryVectors, and
runs the state machine's service integrations with fixed dummy credentials: the first is
patched to call ``run``, the second answered in process (exact cosine over moto's stored
vectors, after checking the caller's role allows ``s3vectors:QueryVectors``), the third
given the state machine's own role's credentials.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
from engram_memory import bootstrap
from engram_memory.adapters.vectors.exact_top_k import exact_top_k
from engram_memory.local.inprocess_invoker import (
    Handler,
    LocalLambdaContext,
    default_functions_dir,
    load_handler,
)

from tests.rehearsal.stand_up import StoodUp

# Variables that belong to the test process, not to any function (kept while one runs).
_PROCESS_PREFIXES = ("ENGRAM_", "AWS_", "POWERTOOLS_", "LOG_LEVEL")


class AccessDenied(AssertionError):
    """A function's call was denied by IAM (the stack lacks a grant)."""


@dataclass
class Function:
    """One deployed function: its name in the template, in moto, its role and environment."""

    name: str  # functions/<name>
    function_name: str
    role_arn: str
    environment: dict[str, str]
    credentials: dict[str, str]
    handler: Handler


def _load(name: str) -> Handler:
    handler = load_handler(default_functions_dir(), name)
    if handler is None:
        raise RuntimeError(f"functions/{name}/handler.py is missing")
    return handler


class Functions:
    """The stack's functions, each runnable under its own role and environment."""

    def __init__(self, stood: StoodUp, admin: Any, endpoint_url: str) -> None:
        """Read each function's configuration from moto and assume its role (as ``admin``)."""
        self.stood = stood
        self.endpoint_url = endpoint_url
        self._current: Function | None = None
        self.lock = threading.RLock()  # one function at a time (see ``run``)
        aws_lambda = admin.client("lambda", region_name=stood.region)
        sts = admin.client("sts", region_name=stood.region)
        self.by_name: dict[str, Function] = {}
        for lid, resource in stood.resources("AWS::Lambda::Function").items():
            name = resource["Properties"]["Handler"].split(".")[1]
            config = aws_lambda.get_function_configuration(FunctionName=stood.physical[lid])
            creds = sts.assume_role(RoleArn=config["Role"],
                                    RoleSessionName=config["FunctionName"][:64])["Credentials"]
            self.by_name[name] = Function(
                name=name, function_name=config["FunctionName"], role_arn=config["Role"],
                environment=dict(config.get("Environment", {}).get("Variables", {})),
                credentials={"AWS_ACCESS_KEY_ID": creds["AccessKeyId"],
                             "AWS_SECRET_ACCESS_KEY": creds["SecretAccessKey"],
                             "AWS_SESSION_TOKEN": creds["SessionToken"]},
                handler=_load(name))
        self.by_function_name = {f.function_name: f for f in self.by_name.values()}

    def runtime_environment(self, function: Function) -> dict[str, str]:
        """What the Lambda runtime adds: region, role credentials; moto as the endpoint."""
        return {"AWS_REGION": self.stood.region, "AWS_DEFAULT_REGION": self.stood.region,
                **function.credentials,
                "AWS_ENDPOINT_URL": self.endpoint_url,  # every AWS call goes to moto
                "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled"}

    @contextmanager
    def running_as(self, function: Function) -> Iterator[None]:
        """This process set up exactly as ``function``'s container; restored afterwards."""
        saved_env, saved_session, saved_current = dict(os.environ), boto3.DEFAULT_SESSION, \
            self._current
        kept = {k: v for k, v in saved_env.items() if not k.startswith(_PROCESS_PREFIXES)}
        os.environ.clear()
        os.environ.update({**kept, **self.runtime_environment(function),
                           **function.environment})
        boto3.DEFAULT_SESSION = self._session()
        self._current = function
        bootstrap.reset()
        try:
            yield
        finally:
            os.environ.clear()
            os.environ.update(saved_env)
            boto3.DEFAULT_SESSION = saved_session
            self._current = saved_current
            bootstrap.reset()

    def run(self, name: str, event: dict[str, Any], *, function_name: str = "",
            nested: bool = False) -> Any:
        """``name``'s handler on ``event`` (JSON round-tripped, as Lambda delivers it).

        One function at a time (the environment is the process's); a ``nested`` call (a
        ``lambda:Invoke`` the running function made, handed back by moto on its server
        thread) runs while its caller waits, so it takes no lock.
        """
        function = self.by_function_name[function_name] if function_name else \
            self.by_name[name]
        with contextlib.nullcontext() if nested else self.lock, self.running_as(function):
            answer = function.handler(json.loads(json.dumps(event)),
                                      LocalLambdaContext(function.function_name))
        return json.loads(json.dumps(answer))

    # -- stand-ins for what moto does not do -------------------------------------------

    def _session(self) -> boto3.Session:
        session = boto3.Session()
        session.events.register("before-call.s3vectors.QueryVectors", self._query_vectors)
        return session

    def _query_vectors(self, params: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]]:
        from moto.backends import get_backend

        body = params.get("body") or b"{}"
        params = json.loads(body.decode() if isinstance(body, bytes) else body)

        stood = self.stood
        index_arn = (f"arn:aws:s3vectors:{stood.region}:{stood.account}:bucket/"
                     f"{params['vectorBucketName']}/index/{params['indexName']}")
        if self._current is None or not role_allows(
                self._current.role_arn, "s3vectors:QueryVectors", index_arn, stood.account):
            from tests.rehearsal.iam_enforcement import DENIALS

            principal = self._current.role_arn if self._current else "?"
            DENIALS.append(f"{principal} s3vectors:QueryVectors {index_arn}")
            return _error_response("AccessDeniedException", 403), {
                "Error": {"Code": "AccessDeniedException", "Message": "denied"},
                "ResponseMetadata": {"HTTPStatusCode": 403}}
        backend = get_backend("s3vectors")[stood.account]["aws"]
        stored = backend.get_index(params["vectorBucketName"], index_name=params["indexName"],
                                   index_arn="").vectors
        wanted = params.get("filter", {})
        keys, vectors = [], []
        for item in stored.values():
            metadata = item.metadata or {}
            if all(metadata.get(k) == v.get("$eq") for k, v in wanted.items()):
                keys.append(item.key)
                vectors.append(item.data["float32"])
        ranked = exact_top_k(params["queryVector"]["float32"], keys, vectors,
                             int(params["topK"]))
        return _error_response("", 200), {
            "vectors": [{"key": k, "distance": 1.0 - s} for k, s in ranked],
            "distanceMetric": "cosine", "ResponseMetadata": {"HTTPStatusCode": 200}}

    def moto_invoke(self, function_name: str, body: Any) -> tuple[bytes, bool]:
        """moto's Lambda ``invoke``: (payload, errored) of the named function, run here."""
        name = function_name.rsplit(":", 1)[-1] if function_name.startswith("arn:") \
            else function_name
        try:
            answer = self.run("", json.loads(body or "{}"), function_name=name, nested=True)
        except Exception as exc:
            return json.dumps({"errorMessage": str(exc), "errorType": type(exc).__name__,
                               "stackTrace": traceback.format_exc().splitlines()}).encode(), \
                True
        return json.dumps(answer).encode(), False


class _Raw:
    def __init__(self, status: int) -> None:
        self.status_code = status
        self.headers: dict[str, str] = {}
        self.content = b""
        self.text = ""


def _error_response(_code: str, status: int) -> Any:
    return _Raw(status)


def role_allows(role_arn: str, action: str, resource: str, account: str) -> bool:
    """The role's identity policies allow ``action`` on ``resource`` (moto's evaluator)."""
    from moto.backends import get_backend
    from moto.iam.access_control import IAMPolicy, PermissionResult

    iam = get_backend("iam")[account]["global"]
    role = role_arn.rsplit("/", 1)[-1]
    policies: list[Any] = [iam.get_role_policy(role, n)[1]
                           for n in iam.list_role_policies(role)]
    policies += iam.list_attached_role_policies(role)[0]
    results = [IAMPolicy(p).is_action_permitted(action, resource) for p in policies]
    return PermissionResult.PERMITTED in results and PermissionResult.DENIED not in results


@contextmanager
def lambda_and_workflow_stand_ins(functions: Functions, state_machine_role: str,
                                  admin: Any) -> Iterator[None]:
    """moto's Lambda ``invoke`` runs ``functions``; the workflow uses its role's credentials."""
    from moto.awslambda import models as lambda_models
    from moto.stepfunctions.parser.asl.utils import boto_client as sfn_clients

    creds = admin.client("sts", region_name=functions.stood.region).assume_role(
        RoleArn=state_machine_role, RoleSessionName="confirmation-gate")["Credentials"]
    original_invoke = lambda_models.LambdaBackend.invoke
    original_client = sfn_clients.boto_client_for

    def invoke(backend: Any, function_name: str, qualifier: Any, body: Any, headers: Any,
               response_headers: Any) -> bytes:
        payload, errored = functions.moto_invoke(function_name, body)
        if errored:
            response_headers["x-amz-function-error"] = "Unhandled"
        return payload

    def client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        from botocore.config import Config

        return boto3.session.Session().client(
            service, region_name=region, endpoint_url=functions.endpoint_url,
            aws_access_key_id=creds["AccessKeyId"],
            aws_secret_access_key=creds["SecretAccessKey"],
            aws_session_token=creds["SessionToken"],
            config=Config(parameter_validation=False, retries={"total_max_attempts": 1}))

    modules = _modules_using(sfn_clients.boto_client_for)
    lambda_models.LambdaBackend.invoke = invoke  # type: ignore[method-assign,assignment]
    for module in modules:
        module.boto_client_for = client_for
    try:
        yield
    finally:
        lambda_models.LambdaBackend.invoke = original_invoke  # type: ignore[method-assign]
        for module in modules:
            module.boto_client_for = original_client


def _modules_using(function: Any) -> list[Any]:
    import sys

    return [m for name, m in list(sys.modules.items())
            if name.startswith("moto.stepfunctions") and
            getattr(m, "boto_client_for", None) is function]
