"""The rehearsal tier: one synthesis per session, one moto server, a clean stack per module.

It runs in its own pytest process (``make rehearse``; ``make test`` runs it apart): its
moto server lives in this process and its functions switch the process environment.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from engram_memory import bootstrap
from engram_memory.local import adapters
from engram_memory.local.moto_server import MotoService, start_moto

from tests.rehearsal.harness import Rehearsal, rehearse
from tests.rehearsal.synthesis import SynthesizedStack, synthesize


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> SynthesizedStack:
    """The rehearsal tenant's stack, synthesized once for the session."""
    return synthesize(tmp_path_factory.mktemp("rehearsal"))


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoService]:
    """One in-process moto server (Step Functions executing) for the session."""
    saved = dict(os.environ)
    # The template's wiring, not local mode's: withdraw every adapter local mode provided.
    bootstrap.provide(**dict.fromkeys(adapters.PROVIDED))
    service = start_moto()
    yield service
    service.stop()
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(scope="module")
def rehearsal(synthesized: SynthesizedStack, moto_server: MotoService) -> Iterator[Rehearsal]:
    """The stack stood up on a clean moto, IAM enforced, for one test module."""
    with rehearse(synthesized, moto_server) as running:
        yield running
