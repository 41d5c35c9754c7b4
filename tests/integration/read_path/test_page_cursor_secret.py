"""The page-cursor secret comes from Secrets Manager when the stack passes only its ARN."""

from __future__ import annotations

from typing import Any

import boto3
from engram_memory import bootstrap

from tests.integration.read_path.conftest import ReadPath, error_code, ids

TEXTS = [f"Wombat note {n} about the wombat burrow service." for n in range(1, 5)]


def _secrets(read_path: ReadPath) -> Any:
    return boto3.client("secretsmanager", region_name=read_path.aws.settings.region)


def _use_arn(read_path: ReadPath, arn: str) -> None:
    read_path.aws.configure(ENGRAM_PAGE_CURSOR_SECRET="", ENGRAM_PAGE_CURSOR_SECRET_ARN=arn)
    read_path.rewire()


def _page_through(read_path: ReadPath) -> list[str]:
    first = read_path.search("wombat", limit=2)
    cursor = first["output"]["value"]["next_page_cursor"]
    second = read_path.search("wombat", limit=2, page_cursor=cursor)
    return ids(first) + ids(second)


def test_paging_works_with_the_secret_fetched_by_its_arn(read_path: ReadPath) -> None:
    for text in TEXTS:
        read_path.admit(text)
    read_path.project()
    arn = _secrets(read_path).create_secret(Name="cursor", SecretString="s" * 64)["ARN"]
    _use_arn(read_path, arn)
    assert sorted(_page_through(read_path)) == sorted(ids(read_path.search("wombat", limit=10)))


def test_the_secret_is_fetched_once_per_container(read_path: ReadPath) -> None:
    secrets = _secrets(read_path)
    arn = secrets.create_secret(Name="cursor", SecretString="first-secret-value")["ARN"]
    _use_arn(read_path, arn)
    assert bootstrap.page_cursor_secret() == "first-secret-value"
    secrets.put_secret_value(SecretId=arn, SecretString="rotated-secret-value")
    # The container keeps the value it read; a new container (reset) reads the new one.
    assert bootstrap.page_cursor_secret() == "first-secret-value"
    bootstrap.reset()
    assert bootstrap.page_cursor_secret() == "rotated-secret-value"


def test_an_unreadable_secret_fails_the_search_with_a_constant_error_and_is_retried(
    read_path: ReadPath,
) -> None:
    read_path.admit(TEXTS[0])
    read_path.project()
    # SecretId accepts a name as well as an ARN; the secret does not exist yet.
    _use_arn(read_path, "engram-cursor-secret")
    envelope = read_path.search("wombat")
    assert error_code(envelope) == "CAPABILITY_UNAVAILABLE"
    assert "engram-cursor-secret" not in str(envelope)
    # The failure was not cached: once the secret exists the same container serves.
    _secrets(read_path).create_secret(Name="engram-cursor-secret", SecretString="now-present")
    assert len(ids(read_path.search("wombat"))) == 1


def test_a_secret_set_in_the_environment_wins_over_the_arn(read_path: ReadPath) -> None:
    read_path.aws.configure(ENGRAM_PAGE_CURSOR_SECRET="local-secret",
                            ENGRAM_PAGE_CURSOR_SECRET_ARN="arn:aws:secretsmanager:x")
    assert bootstrap.page_cursor_secret() == "local-secret"
