"""Every test process runs in local mode: its composition provides local mode's adapters.

Deployed code finds them only through ``bootstrap.provided`` (it never imports
``engram_memory.local``); they apply only when the environment asks for local mode (a moto
endpoint without a named request_admission function; ``ENGRAM_VECTOR_INDEX_LOCAL``).
The rehearsal tier (tests/rehearsal) withdraws them: it runs the template's wiring.
"""

from __future__ import annotations

from engram_memory.local import adapters

adapters.install()
