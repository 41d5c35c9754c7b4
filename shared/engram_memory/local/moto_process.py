"""The local service's moto, in a child process of its own.

Run in the service's process, moto's HTTP server and the handlers share one GIL: another
workspace's two-item ``get`` waited behind every Query of a long search, in Python, even
though each request is short (measured: 7 ms alone, 67 ms beside back-to-back 32-word
searches; 36 with moto in its own process: docs/decisions/local-moto-process.md).

The child (``moto_child``) installs the DynamoDB shims, starts moto's server on a free
loopback port, and answers the operations that have no moto API
(``moto_backends.OPERATIONS``) over a ``multiprocessing.connection`` listener on loopback,
authenticated with a key this process hands it on stdin (never on the command line or in
the environment). It prints one line, its two ports, and exits when its stdin closes: when
the service stops, or dies. It runs
in a session of its own, so a Ctrl-C meant for ``engram-memory serve`` does not kill it
before the service has saved its ``--data-dir`` snapshot through it, and with ``-P`` (the
service's import path, never the working directory's modules). One service per process:
``moto_backends.current()`` is process-wide.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import subprocess
import sys
import threading
from collections.abc import MutableMapping, Sequence
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client, Connection
from typing import Any

from engram_memory import env_names
from engram_memory.local import moto_backends
from engram_memory.local.moto_child import KEY_BYTES
from engram_memory.local.moto_server import (
    DEFAULT_REGION,
    LOOPBACK,
    MotoService,
    aws_environment,
    configure_moto,
)

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
CALL_TIMEOUT_S = 300.0
"""Longest wait for one operation's answer (a large store's snapshot takes seconds)."""


class MotoProcessError(RuntimeError):
    """The moto process did not answer an operation (it failed there, or is gone)."""


class ChildBackends:
    """``MotoBackends`` whose operations run in the moto process."""

    def __init__(self, address: tuple[str, int], authkey: bytes) -> None:
        self._address = address
        self._authkey = authkey
        self._idle: list[Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    def _call(self, operation: str, *args: Any) -> Any:
        with self._lock:
            connection = self._idle.pop() if self._idle else None
        try:
            if connection is None:
                connection = Client(self._address, authkey=self._authkey)
            connection.send((operation, args))
            if not connection.poll(CALL_TIMEOUT_S):
                raise TimeoutError(operation)
            status, value = connection.recv()
        except BaseException as exc:
            if connection is not None:
                connection.close()
            if isinstance(exc, (OSError, EOFError, AuthenticationError)):
                raise MotoProcessError(operation) from exc
            raise
        with self._lock:
            if self._closed:
                connection.close()
            else:
                self._idle.append(connection)
        if status != "ok":
            raise MotoProcessError(f"{operation}: {value}")
        return value

    @property
    def address(self) -> tuple[tuple[str, int], bytes]:
        """Where another process of this service reaches the moto process: address, key."""
        return self._address, self._authkey

    def close(self) -> None:
        """Close the idle connections (and any that comes back later)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def dump_tables(self, region: str, table_names: Sequence[str]) -> dict[str, list[Any]]:
        """Every item of each table, JSON-safe."""
        dump: dict[str, list[Any]] = self._call("dump_tables", region, list(table_names))
        return dump

    def load_tables(self, region: str, dump: dict[str, list[Any]]) -> int:
        """Write dumped items back; how many."""
        return int(self._call("load_tables", region, dump))

    def write_items(self, region: str, request_items: dict[str, list[dict[str, Any]]]) -> None:
        """A BatchWriteItem's puts and deletes, straight into the tables."""
        self._call("write_items", region, request_items)

    def export_kms_key(self, region: str, key_id: str) -> dict[str, str]:
        """The id and material of a KMS key."""
        saved: dict[str, str] = self._call("export_kms_key", region, key_id)
        return saved

    def restore_kms_key(self, region: str, saved: dict[str, str], fresh_key_id: str) -> str:
        """Re-home the fresh key under the saved id and material; its ARN."""
        return str(self._call("restore_kms_key", region, saved, fresh_key_id))

    def export_vectors(self, region: str, bucket: str, index: str) -> list[Any]:
        """Every vector of an index."""
        vectors: list[Any] = self._call("export_vectors", region, bucket, index)
        return vectors

    def import_vectors(self, region: str, bucket: str, index: str, vectors: list[Any]) -> None:
        """Put a snapshot's vectors back."""
        self._call("import_vectors", region, bucket, index, vectors)

    def scope_top_k(self, region: str, bucket: str, index: str, scope_key: str,
                    vector: Sequence[float], top_k: int) -> list[moto_backends.Hit]:
        """Exact cosine top-k of the vectors whose ``scope`` metadata is ``scope_key``."""
        hits: list[moto_backends.Hit] = self._call("scope_top_k", region, bucket, index,
                                                   scope_key, list(vector), top_k)
        return hits


class MotoChild:
    """The running moto process (``MotoService.server``)."""

    def __init__(self, process: subprocess.Popen[bytes], backends: ChildBackends) -> None:
        self.process = process
        self.backends = backends

    def stop(self) -> None:
        """Close its stdin (it exits), wait for it, kill it if it lingers."""
        self.backends.close()
        if moto_backends.current() is self.backends:
            moto_backends.use(None)
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def _handshake(process: subprocess.Popen[bytes]) -> dict[str, int]:
    """The child's one line: its moto and backend ports."""
    assert process.stdout is not None  # Popen was asked for a pipe
    ready, _, _ = select.select([process.stdout], [], [], START_TIMEOUT_S)
    line = process.stdout.readline() if ready else b""
    if not line:
        raise MotoProcessError("the moto process did not start")
    ports = json.loads(line)
    return {"moto": int(ports["moto"]), "backends": int(ports["backends"])}


def _kill(process: subprocess.Popen[bytes]) -> None:
    process.kill()
    process.wait()
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            pipe.close()


def _child_environment(region: str) -> dict[str, str]:
    """This environment, dummy AWS credentials, and this process's import path (the child
    runs with ``-P``: not the working directory's modules, the same code as the service)."""
    path = os.pathsep.join(entry for entry in sys.path if entry)
    return {**os.environ, **aws_environment("", 0, region), "PYTHONPATH": path}


def start_moto_process(environ: MutableMapping[str, str] | None = None) -> MotoService:
    """Start moto in a child process; point this process's AWS clients and
    ``moto_backends.current()`` at it."""
    target = os.environ if environ is None else environ
    region = target.get(env_names.AWS_REGION, DEFAULT_REGION)
    authkey = secrets.token_bytes(KEY_BYTES)
    process = subprocess.Popen(
        [sys.executable, "-P", "-m", "engram_memory.local.moto_child"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_child_environment(region),
        start_new_session=True)
    try:
        assert process.stdin is not None  # Popen was asked for a pipe
        process.stdin.write(authkey.hex().encode() + b"\n")
        process.stdin.flush()
        ports = _handshake(process)
        backends = ChildBackends((LOOPBACK, ports["backends"]), authkey)
        url = f"http://{LOOPBACK}:{ports['moto']}"
        configure_moto(url, ports["moto"], target)
    except BaseException:
        _kill(process)
        raise
    moto_backends.use(backends)
    return MotoService(server=MotoChild(process, backends), url=url, port=ports["moto"])
