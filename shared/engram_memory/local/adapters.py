"""Local mode's composition: the adapters it provides where it differs from AWS.

Deployed code never imports ``engram_memory.local`` (it is not in the Lambda asset;
``tests/unit/test_lambda_import_graph.py``). The seams where local mode needs its own
adapter are registered here, through ``bootstrap.provide``, by whatever starts local mode
(the local service, the moto test tiers):

- ``adjudication_invoker(settings)``: the host API's way to reach request_admission when
  the deployment names no function, used only with a moto endpoint configured: the same
  handler, in process (``InProcessInvoker``).
- ``vector_index(s3vectors_client, settings)``: the S3 Vectors adapter over moto with an
  exact in-process QueryVectors (moto lacks it), used when ``ENGRAM_VECTOR_INDEX_LOCAL``.
- ``in_process_projector()``: ``functions/projector/handler.py`` in this process, for
  ``reproject --in-process`` (and ``reapply-forgets --in-process-projector``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engram_memory import bootstrap
from engram_memory.local.inprocess_invoker import (
    InProcessInvoker,
    LocalLambdaContext,
    default_functions_dir,
    load_handler,
)
from engram_memory.local.moto_s3vectors import MotoS3VectorsIndex
from engram_memory.settings import Settings


def adjudication_invoker(settings: Settings) -> InProcessInvoker | None:
    """request_admission's handler in process, in local mode (a moto endpoint) only."""
    return InProcessInvoker(default_functions_dir()) if settings.endpoint_url else None


def vector_index(client: Any, settings: Settings) -> MotoS3VectorsIndex:
    """The S3 Vectors adapter on moto, QueryVectors answered exactly in process."""
    return MotoS3VectorsIndex(client, settings.vector_bucket, settings.vector_index,
                              region=settings.region)


def in_process_projector() -> Callable[[dict[str, Any]], dict[str, Any]]:
    """``functions/projector/handler.py`` loaded from the checkout, called in this process."""
    handler = load_handler(default_functions_dir(), "projector")
    if handler is None:
        raise SystemExit("functions/projector/handler.py not found")

    def call(event: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = handler(event, LocalLambdaContext("projector"))
        return answer

    return call


PROVIDED: dict[str, Callable[..., Any]] = {
    "adjudication_invoker": adjudication_invoker,
    "vector_index": vector_index,
    "in_process_projector": in_process_projector,
}
"""Local mode's adapter factory of each seam, by seam name."""


def install() -> None:
    """Provide local mode's adapters to every composition root of this process."""
    bootstrap.provide(**PROVIDED)
