"""Canonical JSON and digests: pinned vectors so later changes cannot drift silently."""

from __future__ import annotations

import hashlib
import json

import pytest
from engram_memory.domain.canonical import (
    DigestKind,
    canonical_json,
    digest,
    format_cursor,
    is_digest,
    record_id_for,
)

# RFC 8785 §3.2.2 example input (as JSON text, so number parsing is part of the vector).
RFC8785_INPUT = (
    '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],'
    ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",'
    ' "literals": [null, true, false]}'
)
RFC8785_OUTPUT = (
    '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
    '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
)


def test_canonical_json_matches_the_rfc_8785_example() -> None:
    assert canonical_json(json.loads(RFC8785_INPUT)).decode("utf-8") == RFC8785_OUTPUT


def test_canonical_json_sorts_keys_by_utf16_code_units() -> None:
    # RFC 8785 §3.2.3: keys sort by UTF-16 code units, so U+1F600 (surrogates D83D..) sorts
    # before U+FB33 even though its code point is larger.
    value = {"\ufb33": 1, "\U0001f600": 2, "a": 3}
    assert canonical_json(value).decode("utf-8") == '{"a":3,"\U0001f600":2,"\ufb33":1}'


def test_a_fixed_payload_has_a_fixed_digest_and_record_id() -> None:
    payload = {"schema_version": 2, "purpose_ref": "purpose:docs", "valid_time": {"t": 0}}
    d = digest(DigestKind.RECORD, payload)
    assert d == "sha256:ad7c4c4dae9d65cca16f2b330bbe7f11dcd328404efa7a383558d10c8033099a"
    assert record_id_for(d) == "mem_vv6eytnotvs4zilpfmzqxpt7chongkcaj35huobvldiqzabtbgna"


def test_the_digest_formula_is_the_documented_one() -> None:
    # sha256("engram/v1/" + kind + "\n" + JCS(value)), recomputed without our canonicalizer.
    jcs = b'{"purpose_ref":"purpose:docs","schema_version":2,"valid_time":{"t":0}}'
    expected = "sha256:" + hashlib.sha256(b"engram/v1/record\n" + jcs).hexdigest()
    payload = {"schema_version": 2, "purpose_ref": "purpose:docs", "valid_time": {"t": 0}}
    assert digest(DigestKind.RECORD, payload) == expected


def test_digest_kinds_are_domain_separated() -> None:
    value = {"a": 1}
    digests = {digest(kind, value) for kind in DigestKind}
    assert len(digests) == len(DigestKind)


def test_digest_is_independent_of_key_order() -> None:
    assert digest(DigestKind.PAYLOAD, {"a": 1, "b": [1, 2]}) == digest(
        DigestKind.PAYLOAD, {"b": [1, 2], "a": 1}
    )


def test_record_id_is_mem_plus_lowercase_unpadded_base32() -> None:
    rid = record_id_for("sha256:" + "00" * 32)
    assert rid == "mem_" + "a" * 52
    rid = record_id_for("sha256:" + "ff" * 32)
    assert rid.startswith("mem_")
    assert "=" not in rid
    assert rid == rid.lower()
    assert len(rid) == 56


@pytest.mark.parametrize("value", ["sha256:" + "a" * 64, "sha256:" + "0123456789abcdef" * 4])
def test_well_formed_digests_are_recognised(value: str) -> None:
    assert is_digest(value)


@pytest.mark.parametrize(
    "value",
    [
        "sha256:" + "A" * 64,
        "sha256:" + "a" * 63,
        "sha256:" + "a" * 65,
        "sha512:" + "a" * 64,
        "a" * 64,
        "",
    ],
)
def test_malformed_digests_are_refused(value: str) -> None:
    assert not is_digest(value)


def _is_canonical_cursor(cursor: str) -> bool:
    """ASCII digits, no leading zero: one spelling per position."""
    return cursor.isascii() and cursor.isdigit() and (len(cursor) == 1 or cursor[0] != "0")


def test_cursors_are_canonical_decimals() -> None:
    assert format_cursor(0) == "0"
    assert format_cursor(42) == "42"
    for position in (0, 1, 9, 10, 42, 10**12):
        cursor = format_cursor(position)
        assert _is_canonical_cursor(cursor)
        assert int(cursor) == position
    assert not any(_is_canonical_cursor(bad) for bad in ["042", "-1", "4.2", "", "٣"])
    with pytest.raises(ValueError, match="cursor"):
        format_cursor(-1)
