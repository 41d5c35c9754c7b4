"""The local service's moto process: moto's server and the operations moto has no API for.

Started by ``moto_process.start_moto_process`` as ``python -P -m
engram_memory.local.moto_child``. It reads its key from stdin (refusing anything but
``KEY_BYTES`` of it), installs the DynamoDB shims (``moto_dynamodb``), starts moto's server on
a free loopback port, listens for ``moto_backends.OPERATIONS`` on a loopback
``multiprocessing.connection`` listener (each caller authenticated in its own thread, so a
silent one holds up no one), prints its two ports as one JSON line, sends everything it
prints later to stderr, and exits when its stdin closes.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from contextlib import nullcontext
from multiprocessing import AuthenticationError
from multiprocessing.connection import Connection, Listener, answer_challenge, deliver_challenge

from engram_memory import env_names
from engram_memory.local import moto_backends
from engram_memory.local.moto_server import DEFAULT_REGION, LOOPBACK, aws_environment

KEY_BYTES = 32
"""The length of the key the service hands over on stdin."""

TABLE_OPERATIONS = frozenset({"dump_tables", "load_tables", "write_items"})
"""Operations that read or write tables directly: they take the DynamoDB request turn, so
they never meet a request (or the Query shim's one-partition view) half-way."""


def _answer(connection: Connection, authkey: bytes,
            backends: moto_backends.MotoBackends) -> None:
    """Authenticate one connection, then answer its operations until it closes."""
    from engram_memory.local.moto_dynamodb import dynamodb_turn

    with connection:
        try:  # here, not in the accept loop: a silent caller holds up only its own thread
            deliver_challenge(connection, authkey)
            answer_challenge(connection, authkey)
        except (AuthenticationError, OSError, EOFError):
            return
        while True:
            try:
                operation, args = connection.recv()
            except (EOFError, OSError):
                return
            if operation not in moto_backends.OPERATIONS:
                connection.send(("error", "unknown operation"))
                continue
            turn = dynamodb_turn() if operation in TABLE_OPERATIONS else nullcontext()
            try:
                with turn:
                    result = getattr(backends, operation)(*args)
            except Exception as exc:  # the parent learns which kind, never the text
                connection.send(("error", type(exc).__name__))
                continue
            connection.send(("ok", result))


def _accept(listener: Listener, authkey: bytes) -> None:
    backends = moto_backends.InProcessBackends()
    while True:
        try:
            connection = listener.accept()
        except OSError:  # a caller that went away
            continue
        threading.Thread(target=_answer, args=(connection, authkey, backends), daemon=True,
                         name="moto-backends").start()


def main() -> None:
    """The child: moto's server, the backend operations, until stdin closes."""
    from moto.server import ThreadedMotoServer

    from engram_memory.local.moto_dynamodb import prepare_moto_dynamodb

    authkey = bytes.fromhex(sys.stdin.buffer.readline().decode().strip())
    if len(authkey) != KEY_BYTES:  # never serve unauthenticated
        raise SystemExit(2)
    prepare_moto_dynamodb()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address=LOOPBACK, port=0, verbose=False)
    server.start()
    _, port = server.get_host_and_port()
    # moto's Step Functions service integrations call back on MOTO_PORT.
    os.environ.update(aws_environment(f"http://{LOOPBACK}:{port}", port,
                                      os.environ.get(env_names.AWS_REGION, DEFAULT_REGION)))
    listener = Listener((LOOPBACK, 0))  # authenticated per connection, in _answer
    threading.Thread(target=_accept, args=(listener, authkey), daemon=True,
                     name="accept").start()
    print(json.dumps({"moto": port, "backends": listener.address[1]}), flush=True)
    os.dup2(2, 1)  # nobody reads stdout after this line: moto's prints go to stderr
    sys.stdin.buffer.read()  # until the service closes it (or dies)
    os._exit(0)


if __name__ == "__main__":
    main()
