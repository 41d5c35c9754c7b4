"""The local ``token`` command names its signing key (``kid``), as a host with a key set must."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

import jwt
import pytest
from engram_memory.cli import main as cli
from engram_memory.host_token import keys_from_jwks
from engram_memory.local import state

from tests.support.host_tokens import host_jwks, key_id, load_or_create_host_key


@pytest.mark.parametrize("extra", [[], ["--maintainer"]], ids=["agent", "maintainer"])
def test_the_token_command_emits_the_kid_the_local_key_set_publishes(
    tmp_path: Path, extra: list[str]
) -> None:
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        assert cli.main(["token", "--data-dir", str(tmp_path), "--workspace", "w1",
                         "--purpose", "purpose:p", *extra]) == 0
    header = jwt.get_unverified_header(buffer.getvalue().strip())
    key = load_or_create_host_key(state.home_dir(tmp_path) / state.HOST_KEY_FILE)
    assert header["kid"] == key_id(key)
    # The local service trusts exactly that key under that kid (ENGRAM_HOST_JWKS).
    assert [k.kid for k in keys_from_jwks(host_jwks(key))] == [header["kid"]]
