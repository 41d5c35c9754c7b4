"""How large an admitted record may be: every record's packet fits the largest packet.

The contract bounds ``max_packet_bytes`` to 4,096..1,048,576 and says a record packet's
``record`` is redacted with ``record.record_id`` always present. Capture therefore refuses
content whose record (the view admission stores, RFC 8785 canonical bytes) is larger than
the largest packet minus a reserve for what a packet carries around its record (receipts,
digests, score and rank, a search page's rank receipt and cursor), so ``get`` and a
one-record search page deliver every admitted record whole at ``max_packet_bytes``
1,048,576 (docs/contract.md, "Packet sizes").
"""

from __future__ import annotations

LARGEST_PACKET_BYTES = 1_048_576
"""The contract's largest ``max_packet_bytes`` (and its argument ceiling)."""

PACKET_RESERVE_BYTES = 4_096
"""Room kept for everything a packet adds to its record: the smallest ``max_packet_bytes``."""

RECORD_BYTES_MAX = LARGEST_PACKET_BYTES - PACKET_RESERVE_BYTES
"""The largest record view (canonical JSON bytes) capture admits to the store."""
