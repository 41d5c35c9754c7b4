"""The HTTP API: ``POST /mcp``, the protected-resource metadata, and the host-only routes.

Every other method on ``/mcp`` (``ANY /mcp``) goes to the MCP endpoint too, which answers
405 (``Allow: POST``) as it does locally: the endpoint is stateless, with no stream to open
and no session to end, and a client probing for one (GET, DELETE, PUT, PATCH, …) must get
405 rather than API Gateway's 404. ``ANY /host`` reaches the host API beside
``ANY /host/{proxy+}``, so an anonymous caller gets the same 401 for every ``/host`` path.

Authentication is the host-signed invocation context (a JWT verified inside the MCP
endpoint and the host API against the configured host key), so the routes carry no API
Gateway authorizer; the metadata route must be public by RFC 9728.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Final

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.constructs.retention import retention
from infra.names import ROUTE_HOST, ROUTE_MCP, ROUTE_METADATA, ROUTE_METADATA_FOR_MCP

if TYPE_CHECKING:
    from aws_cdk import aws_lambda as lambda_

    from infra.tenant_config import TenantConfig

ROUTE_MCP_OTHER_METHODS: Final = "ANY /mcp"
"""Every method but POST on ``/mcp``: answered 405 by the MCP endpoint (docs/mcp.md)."""
ROUTE_HOST_ROOT: Final = "ANY /host"
"""``/host`` itself: the host API answers it (401 to an anonymous caller, else 404)."""

# Request metadata only: never bodies, headers, query strings or the Authorization token.
ACCESS_LOG_FIELDS: Final = {
    "requestId": "$context.requestId",
    "ip": "$context.identity.sourceIp",
    "requestTime": "$context.requestTimeEpoch",
    "routeKey": "$context.routeKey",
    "status": "$context.status",
    "protocol": "$context.protocol",
    "responseLength": "$context.responseLength",
    "integrationLatency": "$context.integrationLatency",
    "integrationStatus": "$context.integrationStatus",
}


# What a browser MCP client sends and must read (streamable HTTP transport, bearer auth).
CORS_ALLOW_HEADERS: Final = ("authorization", "content-type", "accept", "mcp-protocol-version",
                             "mcp-session-id", "last-event-id")
CORS_EXPOSE_HEADERS: Final = ("mcp-session-id", "mcp-protocol-version", "www-authenticate")


def cors_for(origins: tuple[str, ...]) -> apigwv2.CorsPreflightOptions | None:
    """API Gateway's CORS answer for the tenant's browser origins (none: no CORS at all).

    API Gateway answers the preflight itself and sets the CORS headers on every response;
    the MCP endpoint checks the same list against ``Origin`` (ENGRAM_ALLOWED_ORIGINS).
    Bearer tokens only, so no credentials mode.
    """
    if not origins:
        return None
    return apigwv2.CorsPreflightOptions(
        allow_origins=list(origins),
        # POST /mcp, and GET for the RFC 9728 metadata a browser client discovers first.
        allow_methods=[apigwv2.CorsHttpMethod.GET, apigwv2.CorsHttpMethod.POST],
        allow_headers=list(CORS_ALLOW_HEADERS),
        expose_headers=list(CORS_EXPOSE_HEADERS),
        allow_credentials=False,
        max_age=Duration.minutes(10),
    )


class EngramApi(Construct):
    """One HTTP API with a throttled, access-logged ``$default`` stage."""

    def __init__(self, scope: Construct, construct_id: str, *, config: TenantConfig,
                 mcp_endpoint: lambda_.IFunction, host_api: lambda_.IFunction) -> None:
        """Create the API, its stage and its routes."""
        super().__init__(scope, construct_id)
        self._config = config
        self.http_api = apigwv2.HttpApi(
            self, "HttpApi",
            api_name=f"engram-memory-{config.tenant_id}",
            description="engram-memory MCP connector",
            create_default_stage=False,
            cors_preflight=cors_for(config.allowed_origins),
        )
        self.access_logs = logs.LogGroup(
            self, "AccessLogs",
            retention=retention(config.log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.stage = self._build_stage()
        self._build_routes(mcp_endpoint, host_api)

    def _build_stage(self) -> apigwv2.HttpStage:
        stage = apigwv2.HttpStage(
            self, "DefaultStage",
            http_api=self.http_api,
            stage_name="$default",
            auto_deploy=True,
            throttle=apigwv2.ThrottleSettings(rate_limit=self._config.api_rate_limit,
                                              burst_limit=self._config.api_burst_limit),
        )
        # Set on the L1 stage: the L2 access-log props need an apigateway (v1) format object.
        cfn_stage: apigwv2.CfnStage = stage.node.default_child  # type: ignore[assignment]
        cfn_stage.access_log_settings = apigwv2.CfnStage.AccessLogSettingsProperty(
            destination_arn=self.access_logs.log_group_arn,
            format=json.dumps(ACCESS_LOG_FIELDS, separators=(",", ":")),
        )
        return stage

    def _build_routes(self, mcp_endpoint: lambda_.IFunction,
                      host_api: lambda_.IFunction) -> None:
        mcp = integrations.HttpLambdaIntegration("Mcp", mcp_endpoint)
        host = integrations.HttpLambdaIntegration("Host", host_api)
        for route_id, route_key, integration in (
            ("McpRoute", ROUTE_MCP, mcp),
            ("MetadataRoute", ROUTE_METADATA, mcp),
            ("MetadataForMcpRoute", ROUTE_METADATA_FOR_MCP, mcp),
            ("HostRoute", ROUTE_HOST, host),
            ("HostRootRoute", ROUTE_HOST_ROOT, host),
            ("McpOtherMethodsRoute", ROUTE_MCP_OTHER_METHODS, mcp),
        ):
            method, path = route_key.split(" ", 1)
            apigwv2.HttpRoute(
                self, route_id,
                http_api=self.http_api,
                route_key=apigwv2.HttpRouteKey.with_(path, apigwv2.HttpMethod[method]),
                integration=integration,
            )

    @property
    def url(self) -> str:
        """The base URL of the ``$default`` stage (ends with ``/``)."""
        url = self.stage.url
        assert url is not None
        return url
