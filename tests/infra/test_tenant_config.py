"""The tenant configuration is validated before anything is synthesized."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from infra.tenant_config import CONFIG_DIR, ConfigError, TenantConfig, load_config

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.infra


def _example() -> dict[str, Any]:
    raw: dict[str, Any] = json.loads((CONFIG_DIR / "example-tenant.json").read_text())
    return raw


def test_without_context_the_example_tenant_is_loaded() -> None:
    config = load_config()
    assert config.tenant_id == "example-tenant"
    assert config.workspace_ids == ("default", "research")
    assert config.admission_mode == "adjudicate"
    assert config.retention_ceiling_ms == 365 * 24 * 3600 * 1000


def test_a_tenant_name_selects_its_file_in_the_config_directory(tmp_path: Path) -> None:
    raw = _example() | {"tenant_id": "acme"}
    (tmp_path / "acme.json").write_text(json.dumps(raw))
    assert load_config(tenant="acme", config_dir=tmp_path).tenant_id == "acme"


def test_a_config_path_wins_over_the_tenant_name(tmp_path: Path) -> None:
    path = tmp_path / "elsewhere.json"
    path.write_text(json.dumps(_example() | {"tenant_id": "globex"}))
    assert load_config(tenant="acme", config_path=str(path)).tenant_id == "globex"


def test_an_unknown_tenant_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no tenant configuration"):
        load_config(tenant="nobody", config_dir=tmp_path)


def test_a_tenant_name_cannot_walk_out_of_the_config_directory() -> None:
    with pytest.raises(ConfigError):
        load_config(tenant="../secrets")


@pytest.mark.parametrize(("change", "problem"), [
    ({"tenant_id": "Acme#1"}, "tenant_id"),
    ({"workspace_ids": []}, "workspace_ids"),
    ({"workspace_ids": ["a#b"]}, "workspace_ids"),
    ({"admission_policy": {"mode": "maybe"}}, "admission_policy.mode"),
    ({"log_retention_days": 31}, "log_retention_days"),
    ({"reserved_concurrency": {"nonexistent": 1}}, "unknown functions"),
    ({"reserved_concurrency": {"capture": 0}}, "at least 1"),
    ({"retention": {"ceiling_days": 0}}, "ceiling_days"),
    ({"purpose_scope": "everything"}, "purpose_scope"),
    ({"semantic": {"embedder": "word2vec"}}, "semantic.embedder"),
    ({"semantic": {"embedder": "bedrock-titan-v2", "titan_dimension": 384}},
     "semantic.titan_dimension"),
])
def test_an_invalid_setting_is_refused_with_its_name(change: dict[str, Any],
                                                     problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        TenantConfig.from_dict(_example() | change)


def test_a_host_key_that_is_not_ed25519_or_p256_is_refused() -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    p384 = ec.generate_private_key(ec.SECP384R1()).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    host = _example()["host"] | {"public_key_pem": p384}
    with pytest.raises(ConfigError, match="public_key_pem"):
        TenantConfig.from_dict(_example() | {"host": host})
    with pytest.raises(ConfigError, match="public_key_pem"):
        TenantConfig.from_dict(_example() | {"host": host | {"public_key_pem": "not a key"}})


def test_a_p256_host_key_is_accepted() -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    p256 = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    host = _example()["host"] | {"public_key_pem": p256}
    assert TenantConfig.from_dict(_example() | {"host": host}).host_public_key_pem == p256


def test_the_audience_defaults_to_a_tenant_urn() -> None:
    host = {k: v for k, v in _example()["host"].items() if k != "audience"}
    config = TenantConfig.from_dict(_example() | {"host": host, "tenant_id": "acme"})
    assert config.audience == "urn:engram-memory:acme"


@pytest.mark.parametrize("origins", [
    ["https://agents.example.com"], ["https://agents.example.com:8443", "http://localhost:5173"],
    ["http://127.0.0.1:3000"], []])
def test_browser_origins_are_taken_as_written(origins: list[str]) -> None:
    config = TenantConfig.from_dict(_example() | {"allowed_origins": origins})
    assert config.allowed_origins == tuple(origins)


@pytest.mark.parametrize("origin", [
    "*", "https://*.example.com", "https://agents.example.com/", "https://agents.example.com/app",
    "http://agents.example.com", "agents.example.com", "https://Agents.example.com",
    "https://agents.example.com:*"])
def test_an_origin_that_a_browser_never_sends_is_refused(origin: str) -> None:
    with pytest.raises(ConfigError, match="allowed_origins"):
        TenantConfig.from_dict(_example() | {"allowed_origins": [origin]})


def test_reads_are_limited_to_the_bound_purpose_unless_the_tenant_widens_them() -> None:
    assert TenantConfig.from_dict(_example()).purpose_scope == "purpose"
    widened = TenantConfig.from_dict(_example() | {"purpose_scope": "workspace"})
    assert widened.purpose_scope == "workspace"


def test_the_index_dimension_follows_the_embedder() -> None:
    assert TenantConfig.from_dict(_example()).embedding_dimension == 384
    titan = _example() | {"semantic": {"embedder": "bedrock-titan-v2", "titan_dimension": 512}}
    assert TenantConfig.from_dict(titan).embedding_dimension == 512


def _host_keys() -> list[dict[str, Any]]:
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    from tests.support.host_tokens import public_jwk

    return [public_jwk(ed25519.Ed25519PrivateKey.generate(), "host-2026-06"),
            public_jwk(ec.generate_private_key(ec.SECP256R1()), "host-2026-12")]


def test_a_host_key_set_reaches_every_function_as_the_jwks_it_reads() -> None:
    from engram_memory import env_names
    from engram_memory.host_token import keys_from_jwks

    from infra.constructs.functions import stack_environment

    keys = _host_keys()
    host = {k: v for k, v in _example()["host"].items() if k != "public_key_pem"}
    config = TenantConfig.from_dict(_example() | {"host": host | {"keys": keys}})
    env = stack_environment(config, table="t", key_table="k", projection="p", ledger="l",
                            kms_key_arn="a")
    assert env_names.HOST_PUBLIC_KEY_PEM not in env
    assert [key.kid for key in keys_from_jwks(env[env_names.HOST_JWKS])] == [
        "host-2026-06", "host-2026-12"]
    # A single PEM key (every configuration before key sets) still deploys as before.
    legacy = stack_environment(load_config(), table="t", key_table="k", projection="p",
                               ledger="l", kms_key_arn="a")
    assert env_names.HOST_JWKS not in legacy
    assert legacy[env_names.HOST_PUBLIC_KEY_PEM] == load_config().host_public_key_pem


@pytest.mark.parametrize("keys", [
    [{"kty": "OKP", "crv": "Ed25519", "x": "AAAA"}],
    "@duplicate",
    "@private-or-both",
], ids=["no-kid", "duplicate-kid", "pem-and-keys"])
def test_a_host_key_set_must_be_named_public_keys_given_alone(keys: Any) -> None:
    host = {k: v for k, v in _example()["host"].items() if k != "public_key_pem"}
    if keys == "@duplicate":
        first = _host_keys()[0]
        keys = [first, first]
    elif keys == "@private-or-both":
        host = _example()["host"]
        keys = _host_keys()
    with pytest.raises(ConfigError, match="host"):
        TenantConfig.from_dict(_example() | {"host": host | {"keys": keys}})
