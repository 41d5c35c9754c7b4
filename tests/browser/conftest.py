"""The browser tier: the review page in headless Chromium against the real local service.

Debian's ``chromium`` (``.ci/run`` installs it) driven by Playwright for Python, pointed
at that executable: Playwright never downloads a browser here. Like the e2e tier, this
tier runs in its own pytest process (the local service runs moto in this process).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from engram_memory.local.service import LocalConfig, RunningService, start_service
from engram_memory.service_home import HOST_KEY_FILE
from playwright.sync_api import Browser, Page, sync_playwright

from tests.support.host_tokens import load_or_create_host_key, mint_maintainer_token

TENANT = "t-browser"
WORKSPACE = "ws1"
OTHER_WORKSPACE = "ws2"
"""Another team's workspace on the same deployment (a scoped reviewer never sees it)."""
CHROMIUM = os.environ.get("ENGRAM_CHROMIUM", "/usr/bin/chromium")


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningService]:
    saved = dict(os.environ)
    data_dir: Path = tmp_path_factory.mktemp("engram-browser")
    # A short approval window keeps the expiry case quick; decisions still settle at once.
    os.environ["ENGRAM_CONFIRMATION_WINDOW_SECONDS"] = "10"
    running = start_service(LocalConfig(port=0, data_dir=data_dir, tenant=TENANT,
                                        workspaces=(WORKSPACE, OTHER_WORKSPACE)))
    try:
        yield running
    finally:
        running.stop()
        os.environ.clear()
        os.environ.update(saved)


def maintainer_token(service: RunningService, workspaces: list[str] | None = None) -> str:
    """A fresh host-operator token for the local service (what the person pastes):
    scoped to ``workspaces`` when given, else tenant-wide."""
    key = load_or_create_host_key(service.home / HOST_KEY_FILE)
    ident = service.identity
    return mint_maintainer_token(key, issuer=ident.issuer, audience=ident.audience,
                                 tenant=ident.tenant, now=time.time(), workspaces=workspaces,
                                 tenant_wide=workspaces is None)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    executable = shutil.which(CHROMIUM) or CHROMIUM
    if not Path(executable).exists():
        message = f"{CHROMIUM} missing: `apt-get install chromium` (.ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(message)  # CI installs it: its absence there is a failure
        pytest.skip(message)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, headless=True,
                                              args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 960, "height": 480},
                                  service_workers="block")
    opened = context.new_page()
    try:
        yield opened
    finally:
        context.close()
