"""Tool handlers in worker processes (``local/process_invoker.py``).

What the local service relies on when it runs handlers there: each call runs in a process
other than the service's, concurrent calls run at once in different workers, the envelope
and the contract's errors come back as in-process calls give them (never a handler's
exception text, raised by a call or by the handler's import), a worker that dies fails the
calls in flight and the next call gets a fresh pool, stopping refuses what is queued and
kills what hangs, and no worker outlives the service.
The handlers here are small files in a temporary ``functions/`` folder.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from engram_memory.domain.context import Tool
from engram_memory.domain.errors import (
    MutationOutcomeUnknown,
    NotFound,
    StoreUnavailable,
)
from engram_memory.local import process_invoker
from engram_memory.local.process_invoker import ProcessInvoker

NO_BACKENDS = (("127.0.0.1", 9), b"k" * 32)  # never dialled by these handlers
SECRET = "handler-detail-that-must-not-leave"

HANDLERS = {
    # Answers its pid, the environment it was given, and the event's arguments.
    "get": """
        import os
        def lambda_handler(event, context):
            return {"ok": True, "pid": os.getpid(), "marker": os.environ.get("WORKER_MARKER"),
                    "arguments": event["arguments"], "function": context.function_name}
    """,
    # Waits until as many callers as it was told have arrived (they must run at once).
    "search": """
        import os, time
        def lambda_handler(event, context):
            folder, expected = event["arguments"]["folder"], event["arguments"]["expected"]
            open(os.path.join(folder, str(os.getpid())), "w").close()
            deadline = time.monotonic() + 30
            while len(os.listdir(folder)) < expected and time.monotonic() < deadline:
                time.sleep(0.01)
            return {"ok": len(os.listdir(folder)) >= expected, "pid": os.getpid()}
    """,
    "capture": f"""
        def lambda_handler(event, context):
            raise RuntimeError("{SECRET}")
    """,
    "forget": """
        import os, signal
        def lambda_handler(event, context):
            os.kill(os.getpid(), signal.SIGKILL)
    """,
    "withdraw": """
        from engram_memory.domain.errors import NotFound
        class HandlersOwnNotFound(NotFound):
            pass
        def lambda_handler(event, context):
            raise HandlersOwnNotFound()
    """,
    "request_admission": f"""
        raise ValueError("{SECRET} at import")
    """,
}


@pytest.fixture
def functions(tmp_path: Path) -> Path:
    root = tmp_path / "functions"
    for name, source in HANDLERS.items():
        (root / name).mkdir(parents=True)
        (root / name / "handler.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return root


@pytest.fixture
def invoker(functions: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ProcessInvoker]:
    monkeypatch.setenv("WORKER_MARKER", "as-of-start")
    running = ProcessInvoker(functions, 2, NO_BACKENDS)
    monkeypatch.setenv("WORKER_MARKER", "changed-later")
    try:
        yield running
    finally:
        running.close()


def _event(arguments: dict[str, object]) -> dict[str, object]:
    return {"tool": "x", "context": {}, "arguments": arguments}


def test_a_call_runs_in_a_worker_with_the_environment_of_the_service_at_start(
    invoker: ProcessInvoker,
) -> None:
    answer = invoker.invoke(Tool.GET, _event({"record_id": "r1"}))
    assert answer["ok"] is True
    assert answer["pid"] != os.getpid()
    assert answer["marker"] == "as-of-start"
    assert answer["arguments"] == {"record_id": "r1"}
    assert answer["function"] == "engram-get"


def test_concurrent_calls_run_at_once_in_different_workers(
    invoker: ProcessInvoker, tmp_path: Path,
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    folder = tmp_path / "arrived"
    folder.mkdir()
    with ThreadPoolExecutor(2) as callers:
        answers = list(callers.map(
            lambda _: invoker.invoke(Tool.SEARCH, _event({"folder": str(folder),
                                                          "expected": 2})), range(2)))
    assert all(answer["ok"] for answer in answers), "the calls ran one after the other"
    assert len({answer["pid"] for answer in answers}) == 2


def test_a_contract_error_crosses_as_its_contract_class(invoker: ProcessInvoker) -> None:
    with pytest.raises(NotFound) as raised:
        invoker.invoke(Tool.WITHDRAW, _event({}))
    assert type(raised.value) is NotFound  # the handler's own subclass stays in the worker


@pytest.mark.parametrize("tool", [
    Tool.CAPTURE,  # raised by the call
    Tool.REQUEST_ADMISSION,  # raised by the handler's import
])
def test_a_crashed_handler_is_an_unknown_outcome_and_its_text_stays_in_the_worker(
    invoker: ProcessInvoker, caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str], tool: Tool,
) -> None:
    with caplog.at_level(logging.DEBUG), pytest.raises(MutationOutcomeUnknown) as raised:
        invoker.invoke(tool, _event({}))  # both tools mutate: the outcome is unknown
    out, err = capfd.readouterr()  # the workers write to this process's stdout and stderr
    assert SECRET not in caplog.text + out + err
    assert SECRET not in repr(raised.value)
    assert raised.value.__cause__ is None
    assert [r.getMessage() for r in caplog.records] == ["tool handler raised"]


def test_a_worker_that_dies_fails_its_call_and_the_next_call_gets_a_fresh_pool(
    invoker: ProcessInvoker,
) -> None:
    with pytest.raises(MutationOutcomeUnknown):
        invoker.invoke(Tool.FORGET, _event({}))  # forget mutates: its outcome is unknown
    assert invoker.invoke(Tool.GET, _event({}))["ok"] is True


def test_a_tool_without_a_handler_is_unavailable(tmp_path: Path) -> None:
    empty = ProcessInvoker(tmp_path / "functions", 1, NO_BACKENDS)
    try:
        assert empty.available() == frozenset()
        with pytest.raises(StoreUnavailable):
            empty.invoke(Tool.GET, _event({}))
    finally:
        empty.close()


def test_stopping_refuses_queued_calls_and_kills_a_hung_worker(
    functions: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(process_invoker, "STOP_TIMEOUT_S", 1.0)
    one = ProcessInvoker(functions, 1, NO_BACKENDS)
    folder = tmp_path / "never-enough"
    folder.mkdir()
    hang = _event({"folder": str(folder), "expected": 99})  # waits up to 30 s
    with ThreadPoolExecutor(2) as callers:
        hung = callers.submit(one.invoke, Tool.SEARCH, hang)
        while not any(folder.iterdir()):  # the first call is running in the worker
            time.sleep(0.05)
        queued = callers.submit(one.invoke, Tool.SEARCH, hang)
        time.sleep(0.2)  # handed to the pool, behind the first
        started = time.monotonic()
        one.close()
        assert time.monotonic() - started < 10  # not the handler's 30 s
        with pytest.raises(StoreUnavailable):
            queued.result(timeout=10)  # never ran: refused
        with pytest.raises(StoreUnavailable):
            hung.result(timeout=10)  # its worker killed: search reads, so unavailable
    assert len(list(folder.iterdir())) == 1  # the queued call never ran
    assert not _alive(int(next(folder.iterdir()).name))


def test_after_close_no_worker_remains_and_calls_are_refused(
    invoker: ProcessInvoker,
) -> None:
    pid = invoker.invoke(Tool.GET, _event({}))["pid"]
    invoker.close()
    assert not _alive(pid)
    with pytest.raises(StoreUnavailable):
        invoker.invoke(Tool.GET, _event({}))


def test_workers_exit_when_the_service_process_dies_without_closing(functions: Path) -> None:
    script = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from engram_memory.domain.context import Tool
        from engram_memory.local.process_invoker import ProcessInvoker
        if __name__ == "__main__":
            invoker = ProcessInvoker(Path({str(functions)!r}), 1, {NO_BACKENDS!r})
            print(invoker.invoke(Tool.GET, {{"arguments": {{}}}})["pid"], flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    worker = int(done.stdout.strip())
    deadline = time.monotonic() + 20
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(worker)


def _alive(pid: int) -> bool:
    """Running (a zombie left for its parent to reap counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"
