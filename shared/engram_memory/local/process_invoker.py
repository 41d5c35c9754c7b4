"""The tool invoker port over worker processes: each call's handler runs in a process of
its own, as each concurrent Lambda invocation runs in an execution environment of its own.

In the service's process every handler shares one GIL with every other call's handler, so
another workspace's two-item ``get`` waited behind the Python work of back-to-back long
searches (docs/decisions/local-handler-processes.md has the numbers). Here a call is handed
to an idle worker (a spawned interpreter with the service's environment and import path),
which loads ``functions/<tool>/handler.py`` once, reaches moto through its HTTP endpoint
and the moto process's backends (``moto_process.ChildBackends``), and answers the
envelope. The event and the envelope cross as JSON text, as with ``lambda:Invoke``; a
handler's exception crosses as its contract class (``domain.errors``), never its text or
stack. Workers ignore a terminal's Ctrl-C (the service stops them), and exit by themselves
when the service's process is gone. A worker that dies fails the calls in flight in every
worker (``ProcessPoolExecutor`` then stops them all): the next call starts a fresh pool.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Mapping
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from engram_memory.domain import errors
from engram_memory.domain.context import MUTATING_TOOLS, Tool
from engram_memory.domain.errors import EngramError, MutationOutcomeUnknown, StoreUnavailable
from engram_memory.local.inprocess_invoker import Handler, LocalLambdaContext, load_handler

logger = logging.getLogger(__name__)

ORPHAN_CHECK_S = 1.0
"""How often a worker looks whether the service's process is still its parent."""
STOP_TIMEOUT_S = 10.0
"""How long ``close`` waits for the calls in flight before it kills their workers."""

BackendsAddress = tuple[tuple[str, int], bytes]
"""Where a worker reaches the moto process's backends: its address and key."""


class ProcessInvoker:
    """Runs each tool handler in one of ``workers`` processes (spawned when first needed)."""

    def __init__(self, functions_dir: Path, workers: int, backends: BackendsAddress) -> None:
        """Nothing starts yet; ``environ`` of the workers is this process's, as of now."""
        if workers < 1:
            raise ValueError("at least one worker process")
        self._dir = functions_dir
        self._workers = workers
        self._initargs = (dict(os.environ), str(functions_dir), backends, os.getpid())
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._closed = False

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._closed:
                raise StoreUnavailable()
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    self._workers, mp_context=multiprocessing.get_context("spawn"),
                    initializer=_start_worker, initargs=self._initargs)
            return self._pool

    def _discard(self, broken: ProcessPoolExecutor) -> None:
        """A worker died: the next call gets a fresh pool (the broken one accepts none)."""
        with self._lock:
            if self._pool is broken:
                self._pool = None
        broken.shutdown(wait=False, cancel_futures=True)

    def available(self) -> frozenset[Tool]:
        """The tools whose handler exists in the checkout."""
        return frozenset(t for t in Tool if (self._dir / t.value / "handler.py").is_file())

    def _submit(self, tool: Tool, event: str) -> tuple[ProcessPoolExecutor, Future[Any]]:
        """Hand the call to the pool; a pool already broken is replaced once (the call has
        not run anywhere yet)."""
        for _ in range(2):
            pool = self._executor()
            try:
                return pool, pool.submit(_invoke_here, tool.value, event)
            except BrokenProcessPool:
                self._discard(pool)
            except RuntimeError:  # shut down: the service is stopping
                break
        raise StoreUnavailable()

    def invoke(self, tool: Tool, invocation: dict[str, Any]) -> dict[str, Any]:
        """Run the tool handler in a worker on a JSON copy of the event."""
        if not (self._dir / tool.value / "handler.py").is_file():
            raise StoreUnavailable()
        pool, future = self._submit(tool, json.dumps(invocation))
        try:
            outcome, value = future.result()
        except BrokenProcessPool:
            # A worker died (killed, out of memory) while this call was in flight.
            logger.error("tool worker process died", extra={"tool": tool.value})
            self._discard(pool)
            raise _crashed(tool) from None
        except CancelledError:  # still queued when the service stopped: it never ran
            raise StoreUnavailable() from None
        if outcome == "error" and isinstance(value, type) and issubclass(value, EngramError):
            raise value()
        if outcome != "ok" or not isinstance(value, str):
            logger.error("tool handler raised", extra={"tool": tool.value})
            raise _crashed(tool)
        envelope = json.loads(value)
        if not isinstance(envelope, dict):
            raise StoreUnavailable()
        return envelope

    def close(self) -> None:
        """Stop the workers: calls still queued are refused, calls in flight get
        ``STOP_TIMEOUT_S`` to finish before their workers are killed; later calls refused."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is None:
            return
        # Python 3.14 has pool.kill_workers(); before it, the pool's processes are private.
        workers = list(getattr(pool, "_processes", {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for worker in workers:
            worker.join(max(deadline - time.monotonic(), 0))
            if worker.is_alive():
                worker.kill()
                worker.join()


def _crashed(tool: Tool) -> EngramError:
    # Like a FunctionError: a mutation may have committed before the handler failed.
    return MutationOutcomeUnknown() if tool in MUTATING_TOOLS else StoreUnavailable()


# --- in the worker process -------------------------------------------------------------

_HANDLERS: dict[str, Handler] = {}
_FUNCTIONS_DIR: list[Path] = []


def _start_worker(environ: Mapping[str, str], functions_dir: str,
                  backends: BackendsAddress, parent: int) -> None:
    """The worker's set-up: the service's environment, local mode's adapters, moto's
    backends in the moto process; no Ctrl-C (the service stops it); gone with its parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.clear()
    os.environ.update(environ)
    from engram_memory import bootstrap
    from engram_memory.local import adapters, moto_backends
    from engram_memory.local.moto_process import ChildBackends

    adapters.install()
    address, authkey = backends
    moto_backends.use(ChildBackends(address, authkey))
    bootstrap.reset()
    _FUNCTIONS_DIR[:] = [Path(functions_dir)]
    threading.Thread(target=_exit_with_parent, args=(parent,), name="orphan-check",
                     daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(ORPHAN_CHECK_S)
    os._exit(0)


def _invoke_here(tool: str, event_json: str) -> tuple[str, object]:
    """Run one handler call in this worker: ("ok", envelope JSON), ("error", the contract
    class it raised) or ("crashed", None); never an exception's text. Loading the handler
    counts as the call (an import that fails is a crashed function, as in Lambda)."""
    try:
        handler = _HANDLERS.get(tool)
        if handler is None:
            handler = load_handler(_FUNCTIONS_DIR[0], tool)
            if handler is None:
                return "error", StoreUnavailable
            _HANDLERS[tool] = handler
        result = handler(json.loads(event_json), LocalLambdaContext(f"engram-{tool}"))
        return "ok", json.dumps(result)
    except EngramError as exc:
        return "error", _contract_class(type(exc))
    except BaseException:  # SystemExit and KeyboardInterrupt too: their text stays here
        return "crashed", None


def _contract_class(raised: type[EngramError]) -> type[EngramError]:
    """The class of ``domain.errors`` the raised one is (a handler module's own subclass
    could not be unpickled by the service)."""
    for cls in raised.__mro__:
        if cls.__module__ == errors.__name__ and issubclass(cls, EngramError):
            return cls
    return StoreUnavailable
