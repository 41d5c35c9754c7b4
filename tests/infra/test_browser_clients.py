"""Browser MCP clients: the tenant's origins reach the endpoint and the API's CORS answer."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from engram_memory import env_names

from infra.constructs.api import CORS_ALLOW_HEADERS
from infra.tenant_config import load_config
from tests.infra.template_view import function_logical_ids

if TYPE_CHECKING:
    from tests.infra.conftest import Synthesized

pytestmark = pytest.mark.infra


def test_the_example_tenant_allows_a_browser_origin() -> None:
    assert load_config().allowed_origins  # otherwise nothing below is exercised


def test_the_endpoint_checks_origins_against_the_tenant_config(
        synthesized: Synthesized) -> None:
    origins = ",".join(load_config().allowed_origins)
    functions = function_logical_ids(synthesized.template)
    for name, lid in functions.items():
        env = synthesized.template["Resources"][lid]["Properties"]["Environment"]["Variables"]
        assert env.get(env_names.ALLOWED_ORIGINS) == (
            origins if name == "mcp_endpoint" else None), name


def test_the_api_answers_cors_for_exactly_those_origins(synthesized: Synthesized) -> None:
    (api,) = synthesized.resources("AWS::ApiGatewayV2::Api").values()
    cors = api["Properties"]["CorsConfiguration"]
    assert cors["AllowOrigins"] == list(load_config().allowed_origins)
    assert "*" not in cors["AllowOrigins"]
    assert sorted(cors["AllowMethods"]) == ["GET", "POST"]
    assert set(cors["AllowHeaders"]) == set(CORS_ALLOW_HEADERS)
    assert "mcp-session-id" in cors["ExposeHeaders"]
    assert cors.get("AllowCredentials", False) is False
