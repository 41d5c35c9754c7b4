"""The local service sets the deployment's variables under the names Settings reads."""

from __future__ import annotations

from pathlib import Path

from engram_memory import env_names, service_home
from engram_memory.local import service
from engram_memory.local.moto_server import aws_environment
from engram_memory.settings import LocalSettings, Settings


def test_every_variable_the_local_service_sets_is_one_settings_reads() -> None:
    identity = service_home.LocalIdentity(
        issuer=service_home.LOCAL_ISSUER, audience=service_home.LOCAL_AUDIENCE,
        tenant="local", page_cursor_secret="s" * 32)
    local = LocalSettings(home=Path("/tmp/engram-unused"), semantic_embedder="onnx")
    env = service._environment(service.LocalConfig(workspaces=("ws",)), identity, "{}", local)
    engram_names = {name for name in aws_environment("http://127.0.0.1:1", 1)
                    if name.startswith("ENGRAM_")}
    assert set(env) | engram_names <= env_names.KNOWN
    # Built from those names alone, the settings describe the local deployment.
    settings = Settings.from_env(env)
    assert (settings.tenant_id, settings.workspace_ids) == ("local", ("ws",))
    assert settings.vector_index_local is True
