"""Where the reference evaluation sets are read from.

Cranfield and LoCoMo are kept out of the repository (licence: evaluation only). They are
read from ``$ENGRAM_REFERENCE_DATA`` when it is set, else from ``../shared/data`` beside the
checkout (where CI clones it). Tests that need them skip, saying why, when neither holds them.
"""

from __future__ import annotations

import os
from pathlib import Path

ENVIRONMENT = "ENGRAM_REFERENCE_DATA"
"""The variable naming the folder that holds ``cranfield/`` and ``locomo-dev/``."""
_BESIDE_CHECKOUT = Path(__file__).resolve().parents[2] / "shared" / "data"


def reference_data() -> Path:
    """The folder holding the reference sets (it may not exist: see :func:`missing`)."""
    configured = os.environ.get(ENVIRONMENT)
    return Path(configured).expanduser().resolve() if configured else _BESIDE_CHECKOUT


def bench_environment() -> dict[str, str]:
    """The environment a bench process started by a test gets: the caller's, without its AWS
    and engram settings (a bench starts its own service), but still naming where the
    reference sets are."""
    return {k: v for k, v in os.environ.items()
            if k == ENVIRONMENT or not k.startswith(("AWS_", "ENGRAM_"))}


def missing(*names: str) -> str | None:
    """Why the named sets cannot be read, or None when every one is there."""
    absent = [name for name in names if not (reference_data() / name).is_dir()]
    if not absent:
        return None
    return (f"reference set(s) {', '.join(absent)} not found under {reference_data()} "
            f"(set {ENVIRONMENT} to the folder holding them)")
