"""The review page the local service serves at /host/review: strict CSP, text only.

The browser tier (tests/browser) drives it in Chromium; this checks, over plain HTTP,
what a host copying the page relies on: the headers, and that the markup and script hold
no inline code, load nothing from elsewhere, and never parse a value as HTML.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import httpx2
from engram_memory.local.review_page import CONTENT_SECURITY_POLICY
from engram_memory.local.service import RunningService

from .conftest import WORKSPACE
from .test_host_routes import maintainer


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_the_review_page_is_served_with_a_strict_content_security_policy(
    service: RunningService,
) -> None:
    page = httpx2.get(service.base_url + "/host/review")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert csp == CONTENT_SECURITY_POLICY
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["connect-src"] == "'self'"
    assert directives["form-action"] == "'none'"
    assert directives["frame-ancestors"] == "'none'"
    assert "unsafe" not in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["cache-control"] == "no-store"
    for asset, media in (("review.js", "text/javascript"), ("review.css", "text/css")):
        served = httpx2.get(service.base_url + "/host/review/" + asset)
        assert served.status_code == 200
        assert served.headers["content-type"].startswith(media)
        assert served.headers["content-security-policy"] == CONTENT_SECURITY_POLICY


def test_the_page_has_no_inline_code_and_loads_only_itself(service: RunningService) -> None:
    parsed = _Tags()
    parsed.feed(httpx2.get(service.base_url + "/host/review").text)
    scripts = [attrs for tag, attrs in parsed.tags if tag == "script"]
    assert scripts == [{"src": "/host/review/review.js", "defer": None}]
    assert not [tag for tag, _ in parsed.tags if tag == "style"]
    for tag, attrs in parsed.tags:
        assert "style" not in attrs, tag
        assert not any(name.startswith("on") for name in attrs), tag
        for name in ("src", "href"):
            assert not (attrs.get(name) or "/").startswith(("http:", "https:", "//")), tag
        if tag == "input":  # no name: a form submission could never carry the token
            assert "name" not in attrs


def test_the_script_renders_text_and_keeps_the_token_in_memory(service: RunningService) -> None:
    script = httpx2.get(service.base_url + "/host/review/review.js").text
    for forbidden in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write",
                      "eval(", "new Function", "localStorage", "sessionStorage",
                      "document.cookie", "indexedDB", "location.hash", "history."):
        assert forbidden not in script, forbidden
    assert re.search(r"textContent", script)


def test_the_page_may_call_the_host_routes_from_its_own_origin(service: RunningService) -> None:
    headers = {"Authorization": f"Bearer {maintainer(service)}", "Origin": service.base_url}
    listed = httpx2.get(service.base_url + "/host/confirmations",
                        params={"workspace_id": WORKSPACE, "state": "pending"}, headers=headers)
    assert listed.status_code == 200
    assert "items" in listed.json()
    elsewhere = httpx2.get(service.base_url + "/host/confirmations",
                           params={"workspace_id": WORKSPACE, "state": "pending"},
                           headers={**headers, "Origin": "https://evil.example"})
    assert elsewhere.status_code == 403
