"""The reference review page, served by the local service at ``GET /host/review``.

Three static files (``local/review/``: HTML, one script, one stylesheet; no build step, no
third-party asset) that list what waits for a human through the host routes and send the
decision back (docs/review.md). Every response carries a strict Content-Security-Policy:
scripts and styles from this origin only (no inline script or style, no eval), requests to
this origin only, nothing framed, no form submission, no images or other media, so even a
value rendered as markup by mistake could neither run nor load anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

REVIEW_PATH: Final = "/host/review"
_FILES: Final = Path(__file__).with_name("review")
CONTENT_SECURITY_POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS: Final = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
}
_ASSETS: Final = {
    REVIEW_PATH: ("review.html", "text/html; charset=utf-8"),
    REVIEW_PATH + "/review.js": ("review.js", "text/javascript; charset=utf-8"),
    REVIEW_PATH + "/review.css": ("review.css", "text/css; charset=utf-8"),
}


def review_routes() -> list[BaseRoute]:
    """GET routes of the page and its two assets (read once, at startup)."""
    routes: list[BaseRoute] = []
    for path, (name, media_type) in _ASSETS.items():
        content = (_FILES / name).read_bytes()

        async def serve(_: Request, body: bytes = content, media: str = media_type) -> Response:
            return Response(body, media_type=media, headers=SECURITY_HEADERS)

        routes.append(Route(path, serve, methods=["GET"]))
    return routes


def review_url(base_url: str) -> str:
    """The page's address on a service listening at ``base_url``."""
    return base_url + REVIEW_PATH
