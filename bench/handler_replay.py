"""The search handler's own CPU with the stand-in out of its process: recorded answers replayed.

bench/search_scale.py measures the handler beside moto in one process: at 200k records
moto's tables fill gigabytes of the same heap and caches, and its CPU is subtracted per
call. A Lambda's process holds only the handler. So, with ``--replay``, each size's query
set is run once more with every DynamoDB call's request body and raw HTTP answer recorded
(botocore's ``before-send`` and ``response-received`` events on the handler's client), and
a fresh interpreter without moto (this module's ``main``) runs the real search handler on
the same events, answering each call from the recording (the same bytes: botocore and
``fast_items`` parse them as they parsed moto's). What it times is the process's CPU per
search, nothing subtracted. A call whose request was not recorded fails the run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class Recorder:
    """Request body → raw answer of every DynamoDB call a client makes while attached."""

    def __init__(self, client: Any) -> None:
        self._events = client.meta.events
        self._local = threading.local()
        self.answers: dict[str, dict[str, Any]] = {}

    def __enter__(self) -> Recorder:
        # First: moto's own before-send answers the call and ends the event.
        self._events.register_first("before-send.dynamodb", self._sent, unique_id="replay-rec")
        self._events.register("response-received.dynamodb", self._answered,
                              unique_id="replay-ans")
        return self

    def __exit__(self, *_: Any) -> None:
        self._events.unregister("before-send.dynamodb", unique_id="replay-rec")
        self._events.unregister("response-received.dynamodb", unique_id="replay-ans")

    def _sent(self, request: Any, **_: Any) -> None:
        self._local.key = _key(request)

    def _answered(self, response_dict: dict[str, Any] | None, **_: Any) -> None:
        if response_dict is not None:
            self.answers[self._local.key] = {
                "status": response_dict["status_code"],
                "headers": dict(response_dict["headers"]),
                "body": response_dict["body"].decode("utf-8")}


def _key(request: Any) -> str:
    body = request.body
    text = body.decode("utf-8") if isinstance(body, bytes) else str(body)
    return f"{request.headers.get('X-Amz-Target', b'')!r} {text}"


class _Body:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._data


def _replay(answers: dict[str, dict[str, Any]]) -> Any:
    from botocore.awsrequest import AWSResponse

    def answer(request: Any, **_: Any) -> Any:
        found = answers.get(_key(request))
        if found is None:
            raise SystemExit("replay: a call that was not recorded")
        return AWSResponse(request.url, found["status"], found["headers"],
                           _Body(found["body"].encode("utf-8")))
    return answer


def main() -> None:
    """``python handler_replay.py RECORDING ROUNDS``: handler CPU p50/p95 as JSON."""
    recording = json.loads(Path(sys.argv[1]).read_text())
    rounds = int(sys.argv[2])
    os.environ.update(recording["env"])
    os.environ["AWS_ENDPOINT_URL"] = "http://127.0.0.1:9"  # nothing unanswered leaves
    from engram_memory import bootstrap
    from engram_memory.composition import search as search_root
    from engram_memory.local.inprocess_invoker import (
        LocalLambdaContext,
        default_functions_dir,
        load_handler,
    )

    bootstrap.reset()
    bootstrap.dynamodb_client().meta.events.register_first(
        "before-send.dynamodb", _replay(recording["answers"]))
    handler = load_handler(default_functions_dir(), "search")
    assert handler is not None
    service = search_root.service()  # the cap the recording ran with, as search_scale sets it
    service._completion._config = dataclasses.replace(service._config,
                                                      completion_cap=recording["cap"])
    cpu_ms: list[float] = []
    for _ in range(rounds):
        for event in recording["events"]:
            started = time.process_time()
            envelope = handler(event, LocalLambdaContext(function_name="search"))
            cpu_ms.append((time.process_time() - started) * 1000)
            if not envelope["ok"]:
                raise SystemExit(f"replayed search failed: {envelope['error']['code']}")
    cpu_ms.sort()
    print(json.dumps({"p50": statistics.median(cpu_ms),
                      "p95": cpu_ms[max(0, round(0.95 * len(cpu_ms)) - 1)]}))


if __name__ == "__main__":
    main()
