"""One configuration surface: Settings reads exactly the names env_names declares."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from engram_memory import env_names
from engram_memory.domain.context import Tool
from engram_memory.settings import LocalSettings, OperatorSettings, Settings

DEPLOYMENT = {
    "ENGRAM_TENANT_ID": "tenant-a",
    "ENGRAM_TABLE_NAME": "main",
    "ENGRAM_KEY_TABLE_NAME": "keys",
    "ENGRAM_PROJECTION_TABLE_NAME": "projection",
}


class RecordingEnv(Mapping[str, str]):
    """An environment that remembers every name looked up in it."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self.values = dict(values)
        self.read: set[str] = set()

    def __getitem__(self, name: str) -> str:
        self.read.add(name)
        return self.values[name]

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("settings must look names up, never list the environment")

    def __len__(self) -> int:
        return len(self.values)


def test_settings_read_only_declared_names_and_every_deployment_name() -> None:
    env = RecordingEnv(DEPLOYMENT)
    Settings.from_env(env)
    local = RecordingEnv({})
    LocalSettings.from_env(local)
    operator = RecordingEnv(DEPLOYMENT)
    OperatorSettings.from_env(operator)
    read = env.read | local.read | operator.read
    assert read <= env_names.KNOWN
    # No declared name is left unread: a name in the list is a name the service uses.
    assert read >= env_names.KNOWN


def test_function_names_come_from_engram_function_variables() -> None:
    names = Settings.from_env({**DEPLOYMENT, "ENGRAM_FUNCTION_SEARCH": "fn-search",
                               "ENGRAM_FUNCTION_REQUEST_ADMISSION": "fn-admit"}).function_names
    assert names == {Tool.SEARCH: "fn-search", Tool.REQUEST_ADMISSION: "fn-admit"}


def test_http_and_gate_settings_come_from_their_variables() -> None:
    settings = Settings.from_env({
        **DEPLOYMENT, "ENGRAM_ALLOWED_HOSTS": "a.example, b.example",
        "ENGRAM_ALLOWED_ORIGINS": "https://app.example", "ENGRAM_RESOURCE_URL": "https://r/mcp",
        "ENGRAM_CONFIRMATION_EVENT_BUS": "bus", "ENGRAM_CONFIRMATION_WINDOW_SECONDS": "12"})
    assert settings.allowed_hosts == ("a.example", "b.example")
    assert settings.allowed_origins == ("https://app.example",)
    assert settings.resource_url == "https://r/mcp"
    assert settings.confirmation_event_bus == "bus"
    assert settings.confirmation_window_seconds == 12


def test_the_operator_tool_needs_only_the_main_table() -> None:
    operator = OperatorSettings.from_env({"ENGRAM_TABLE_NAME": "main"})
    assert (operator.table_name, operator.region, operator.endpoint_url) == ("main", None, None)
