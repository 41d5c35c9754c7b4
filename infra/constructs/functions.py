"""The eleven Lambda functions: one role, one log group and one function each.

Every function runs the same code asset (``shared/engram_memory`` + ``functions/``) with
handler ``functions.<name>.handler.lambda_handler``; run-time dependencies come from the
layer built by the package step (infra/package.py). Permissions are granted elsewhere
(infra/constructs/access.py), function by function; a role starts with logs only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from aws_cdk import (
    Annotations,
    CfnRule,
    CfnRuleAssertion,
    Duration,
    Fn,
    RemovalPolicy,
    Stack,
)
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct
from engram_memory import env_names as env

from infra.constructs.retention import retention
from infra.names import (
    FUNCTIONS,
    METRICS_NAMESPACE,
    SNAP_START_ALIAS,
    SNAP_START_FUNCTIONS,
    TOOL_FUNCTIONS,
    TOOL_SERVICE_NAME,
)
from infra.package import LAYER_DIR, REPO_ROOT, packaged_layer_dir, stage_source

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from infra.tenant_config import TenantConfig

RUNTIME: Final = lambda_.Runtime.PYTHON_3_13  # infra/package.py PYTHON_VERSION matches
ARCHITECTURE: Final = lambda_.Architecture.ARM_64
# Context flag (`-c engram:synthWithoutLayer=true`) for offline synthesis in tests and CI:
# without it, a missing layer stops synthesis; with it, the template cannot be deployed.
SYNTH_WITHOUT_LAYER: Final = "engram:synthWithoutLayer"
NO_LAYER_RULE: Final = "EngramLayerPackaged"


class MissingLayerError(RuntimeError):
    """Synthesis without the dependency layer that was not explicitly allowed."""


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    """Sizing of one function (the tool timeouts stay below the MCP endpoint's)."""

    name: str
    description: str
    timeout_s: int
    memory_mb: int = 512


SPECS: Final = {
    spec.name: spec for spec in (
        FunctionSpec("search", "engram_memory_search: lexical search of current records", 10,
                     1024),
        FunctionSpec("get", "engram_memory_get: read one current record", 10),
        FunctionSpec("capture", "engram_memory_capture: seal a pending candidate", 15),
        FunctionSpec("request_admission", "engram_memory_request_admission: admit or reject",
                     20),
        FunctionSpec("withdraw", "engram_memory_withdraw: end a pending candidate", 15),
        FunctionSpec("forget", "engram_memory_forget: tombstone an admitted record", 15),
        FunctionSpec("mcp_endpoint", "MCP streamable HTTP endpoint (POST /mcp)", 29),
        FunctionSpec("host_api", "Host-only routes: confirmations and adjudication", 29),
        # A timeout fails (and bisects) the whole batch: room for its largest records.
        FunctionSpec("projector", "Stream projector: the lexical search index", 300),
        # Two small writes per message; sized with the queue (infra/constructs/gate.py).
        FunctionSpec("confirmation_notifier", "Confirmation queue consumer: notifies the host",
                     10, 256),
        FunctionSpec("expiry_sweeper", "Scheduled sweep of expired records", 300),
    )
}


def service_name(function: str) -> str:
    """The Powertools service name of a function (the tools share the runtime's name)."""
    if function in TOOL_FUNCTIONS:
        return TOOL_SERVICE_NAME
    return f"engram-{function.replace('_', '-')}"


def handler_path(function: str) -> str:
    """The repository path of a function's handler module."""
    return f"functions/{function}/handler.py"


class EngramFunctions(Construct):
    """Builds every function with its own least-privilege role and log group."""

    def __init__(self, scope: Construct, construct_id: str, *, config: TenantConfig,
                 environment: Mapping[str, str], layer_dir: Path = LAYER_DIR) -> None:
        """Create all functions from one staged code asset and the dependency layer."""
        super().__init__(scope, construct_id)
        self._config = config
        self._environment = dict(environment)
        self._code = lambda_.Code.from_asset(str(stage_source()))
        self._layers = self._build_layers(layer_dir)
        self.roles: dict[str, iam.Role] = {}
        self.log_groups: dict[str, logs.LogGroup] = {}
        self.functions: dict[str, lambda_.Function] = {
            name: self._build_function(SPECS[name]) for name in FUNCTIONS
        }
        # What callers invoke: the function, or with SnapStart its ``live`` alias (a
        # snapshot only serves published versions; $LATEST would cold-start every time).
        self.entry_points: dict[str, lambda_.IFunction] = {
            name: self._entry_point(name, function) for name, function in self.functions.items()
        }

    def _build_layers(self, layer_dir: Path) -> list[lambda_.ILayerVersion]:
        packaged = packaged_layer_dir(layer_dir)
        if packaged is None:
            self._refuse_undeployable_template(layer_dir)
            return []
        return [lambda_.LayerVersion(
            self, "Dependencies",
            code=lambda_.Code.from_asset(str(packaged)),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="engram-memory run-time dependencies (manylinux aarch64 wheels)",
        )]

    def _refuse_undeployable_template(self, layer_dir: Path) -> None:
        """No layer: a synth error, or (flag set) a template CloudFormation refuses to deploy.

        Eleven functions without their dependencies would deploy "successfully" and fail
        every invocation with ImportModuleError.
        """
        if str(self.node.try_get_context(SYNTH_WITHOUT_LAYER)).lower() != "true":
            raise MissingLayerError(
                f"No Lambda dependency layer at {layer_dir}/python: run "
                "`python infra/package.py` before `cdk deploy` (docs/deploy.md).")
        Annotations.of(self).add_info(
            f"{SYNTH_WITHOUT_LAYER}: synthesized without the dependency layer; "
            "CloudFormation refuses to deploy this template.")
        # A rule whose assertion is always false: create and update fail before any resource.
        CfnRule(Stack.of(self), NO_LAYER_RULE, assertions=[CfnRuleAssertion(
            assert_=Fn.condition_equals("layer", "missing"),
            assert_description="Synthesized without the Lambda dependency layer "
                               "(engram:synthWithoutLayer): run `python infra/package.py`, "
                               "then deploy again.")])

    def _build_role(self, name: str, log_group: logs.LogGroup) -> iam.Role:
        role = iam.Role(
            self, f"{_pascal(name)}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"engram-memory {name}: least privilege",
        )
        # Its own log group only (no AWSLambdaBasicExecutionRole: it allows every group).
        role.add_to_principal_policy(iam.PolicyStatement(
            actions=["logs:CreateLogStream", "logs:PutLogEvents"],
            resources=[log_group.log_group_arn],
        ))
        return role

    def _build_function(self, spec: FunctionSpec) -> lambda_.Function:
        pascal = _pascal(spec.name)
        log_group = logs.LogGroup(
            self, f"{pascal}Logs",
            retention=retention(self._config.log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        role = self._build_role(spec.name, log_group)
        if not (REPO_ROOT / handler_path(spec.name)).is_file():
            Annotations.of(self).add_warning_v2(
                f"engram:missing-handler:{spec.name}",
                f"{handler_path(spec.name)} is missing: this function would not start.")
        function = lambda_.Function(
            self, pascal,
            description=spec.description,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler=f"functions.{spec.name}.handler.lambda_handler",
            code=self._code,
            layers=self._layers,
            role=role,
            log_group=log_group,
            memory_size=spec.memory_mb,
            timeout=Duration.seconds(spec.timeout_s),
            tracing=lambda_.Tracing.ACTIVE,
            reserved_concurrent_executions=self._config.reserved_concurrency.get(spec.name),
            environment={**self._environment, **_powertools_env(spec.name)},
            snap_start=(lambda_.SnapStartConf.ON_PUBLISHED_VERSIONS
                        if self._snap_starts(spec.name) else None),
        )
        self.roles[spec.name] = role
        self.log_groups[spec.name] = log_group
        return function

    def _snap_starts(self, name: str) -> bool:
        return self._config.snap_start and name in SNAP_START_FUNCTIONS

    def _entry_point(self, name: str, function: lambda_.Function) -> lambda_.IFunction:
        if not self._snap_starts(name):
            return function
        Annotations.of(function).acknowledge_warning(
            "@aws-cdk/aws-lambda:snapStartRequirePublish",
            "Invoked only through its 'live' alias, which publishes a version per change.")
        return lambda_.Alias(self, f"{_pascal(name)}Live", alias_name=SNAP_START_ALIAS,
                             version=function.current_version)

    def invoke_name(self, function: str) -> str:
        """What a caller passes as ``FunctionName`` (the alias-qualified name with SnapStart)."""
        return self.entry_points[function].function_name

    def add_environment(self, function: str, values: Mapping[str, str]) -> None:
        """Set function-specific variables (resource names only known after construction)."""
        for key, value in values.items():
            self.functions[function].add_environment(key, value)

    def arns(self, names: tuple[str, ...]) -> list[str]:
        """The ARNs callers may invoke (the alias ARN only, with SnapStart)."""
        return [self.entry_points[name].function_arn for name in names]


def _powertools_env(function: str) -> dict[str, str]:
    return {
        "POWERTOOLS_SERVICE_NAME": service_name(function),
        "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
        "LOG_LEVEL": "INFO",
        # Responses and exception text may carry memory content: never into traces or logs.
        "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
        "POWERTOOLS_TRACER_CAPTURE_ERROR": "false",
        "POWERTOOLS_LOGGER_LOG_EVENT": "false",
    }


def _pascal(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def stack_environment(config: TenantConfig, *, table: str, key_table: str, projection: str,
                      ledger: str, kms_key_arn: str) -> dict[str, str]:
    """The variables every function reads (names: engram_memory.env_names)."""
    return {
        env.TENANT_ID: config.tenant_id,
        env.WORKSPACE_IDS: ",".join(config.workspace_ids),
        env.TABLE_NAME: table,
        env.KEY_TABLE_NAME: key_table,
        env.PROJECTION_TABLE_NAME: projection,
        env.LEDGER_TABLE_NAME: ledger,
        env.KMS_KEY_ID: kms_key_arn,
        env.HOST_ISSUER: config.host_issuer,
        env.AUDIENCE: config.audience,
        env.ADMISSION_POLICY_ID: config.admission_policy_id,
        env.ADMISSION_POLICY_VERSION: config.admission_policy_version,
        env.ADMISSION_MODE: config.admission_mode,
        env.RETENTION_CEILING_MS: str(config.retention_ceiling_ms),
        env.RETAIN_ALLOWED: "true" if config.retain_allowed else "false",
        env.RECONCILIATION_FAMILIES: ",".join(config.reconciliation_families),
        env.REDACTION_ALLOWLIST: ",".join(config.redaction_allowlist),
        env.PURPOSE_SCOPE: config.purpose_scope,
        # The host's trust anchor: the key set when configured, else the one PEM key.
        **({env.HOST_JWKS: config.host_jwks} if config.host_keys
           else {env.HOST_PUBLIC_KEY_PEM: config.host_public_key_pem}),
    }
