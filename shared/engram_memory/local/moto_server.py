"""The moto server that stands in for AWS in local mode.

It listens on a free loopback port; every boto3 client of the process is pointed at it
through ``AWS_ENDPOINT_URL`` (so nothing in local mode can reach real AWS), with dummy
credentials. Step Functions execution is switched on through moto's config API, and
``MOTO_PORT`` tells moto's Step Functions service integrations where to call back.
"""

from __future__ import annotations

import json
import logging
import os
import urllib.request
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Protocol

from engram_memory import env_names

LOOPBACK = "127.0.0.1"
MOTO_ACCOUNT_ID = "123456789012"
DEFAULT_REGION = "us-east-1"


class Stoppable(Protocol):
    """A moto server in this process, or the process running one (``moto_process``)."""

    def stop(self) -> None:
        """Stop serving."""
        ...


@dataclass
class MotoService:
    """A running moto server and its endpoint URL."""

    server: Stoppable
    url: str
    port: int

    def stop(self) -> None:
        """Stop serving (the in-memory state is gone afterwards)."""
        self.server.stop()


def aws_environment(url: str, port: int, region: str = DEFAULT_REGION) -> dict[str, str]:
    """The process environment that routes boto3 to moto with dummy credentials."""
    return {
        "AWS_ENDPOINT_URL": url,
        env_names.AWS_ENDPOINT_URL: url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        env_names.AWS_DEFAULT_REGION: region,
        env_names.AWS_REGION: region,
        "MOTO_PORT": str(port),
        # moto's DynamoDB streams need account-id endpoints off.
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
        "POWERTOOLS_TRACE_DISABLED": "1",
        "POWERTOOLS_METRICS_NAMESPACE": "engram-local",
    }


def _post_json(url: str, body: dict[str, object]) -> None:
    request = urllib.request.Request(  # noqa: S310 - a fixed loopback http URL
        url, data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        response.read()


def configure_moto(url: str, port: int, environ: MutableMapping[str, str]) -> None:
    """Point ``environ``'s AWS clients at the moto server at ``url`` and switch its Step
    Functions execution on."""
    environ.update(aws_environment(url, port, environ.get(env_names.AWS_REGION, DEFAULT_REGION)))
    # Metrics would print one EMF JSON line per call to the console; opt back in if wanted.
    environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    _post_json(url + "/moto-api/config", {"stepfunctions": {"execute_state_machine": True}})


def start_moto(environ: MutableMapping[str, str] | None = None) -> MotoService:
    """Start moto in this process on a free loopback port; point this process's AWS
    clients at it (the test tiers; the local service runs moto in a process of its own,
    ``moto_process``)."""
    from moto.server import ThreadedMotoServer

    # One access-log line per AWS call would drown the service's own output.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address=LOOPBACK, port=0, verbose=False)
    server.start()
    _, port = server.get_host_and_port()
    url = f"http://{LOOPBACK}:{port}"
    configure_moto(url, port, os.environ if environ is None else environ)
    return MotoService(server=server, url=url, port=port)
