"""A small client of the host routes for the backup commands (maintainer token, JSON)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

TOKEN_VARIABLE = "ENGRAM_MAINTAINER_TOKEN"  # noqa: S105 - a variable name, not a secret
TIMEOUT_S = 120.0


class HostCallFailed(Exception):
    """A host route answered with an error (its status and error code)."""

    def __init__(self, status: int, code: str) -> None:
        super().__init__(f"{status} {code}")
        self.status = status
        self.code = code


def token_from(value: str | None) -> str:
    """The maintainer token: ``--token`` or ``ENGRAM_MAINTAINER_TOKEN`` (empty if neither)."""
    return value or os.environ.get(TOKEN_VARIABLE, "")


class HostClient:
    """Calls ``BASE/host/...`` with a maintainer token."""

    def __init__(self, base_url: str, token: str) -> None:
        import httpx2

        self._http = httpx2.Client(base_url=base_url.rstrip("/"), timeout=TIMEOUT_S,
                                   headers={"Authorization": f"Bearer {token}"})

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def call(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
             body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """One request; the JSON answer, or HostCallFailed."""
        response = self._http.request(method, path, params=dict(params or {}),
                                      json=None if body is None else dict(body))
        try:
            answer = response.json()
        except ValueError:
            answer = {}
        if response.status_code >= 400:
            error = answer.get("error", {}) if isinstance(answer, dict) else {}
            raise HostCallFailed(response.status_code, str(error.get("code", "HTTP_ERROR")))
        return dict(answer)


def progress_bar(total: int | None, description: str) -> Any:
    """A tqdm bar on a terminal (the ``operator`` extra), else None."""
    import sys

    if not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=description, unit=" items", file=sys.stderr)
