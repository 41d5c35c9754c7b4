"""A secret detector for captured text (CONTRACT.md §4: what must never be stored).

A fixed set of precise regular expressions, one per kind of secret, each anchored on
what makes that secret recognisable (a vendor prefix, a PEM armour line, a secret-named
key followed by a value, credentials inside a URL). No entropy heuristics: our payloads
are full of digests, ids and base32 that an entropy test would flag. Module-level state is
only compiled patterns, so the detector is thread-safe and import has no side effects.
The detector answers with a kind name only; the matched text never leaves this module.
See docs/contract.md for coverage and the rationale for not using detect-secrets.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engram_memory.contract.inputs import Evidence, Payload

# Values that name a secret without being one: env/template references, masks, code.
_PLACEHOLDER = re.compile(
    r"""^(?:
        \$\{?[A-Za-z_][\w.]*\}?      # $VAR or ${VAR}
      | \{\{.*\}\} | \{[\w.]+\}      # {{ template }} or {name}
      | <[^<>]+> | \[[^\[\]]+\]      # <password> or [password]
      | %\(?[\w]+\)?s? | %[\w]+%    # %(name)s or %VAR%
      | [*xX.\u2022]{3,}            # *** / xxx / ... / •••
      | (?:os\.)?(?:environ|getenv|env|process\.env|secrets?|vault|config|settings)\b.*
      | [A-Za-z_][\w.]*\(.*         # a call such as getpass()
      | (?:none|null|nil|true|false|empty|redacted|changeme|required|optional|example)
    )$""",
    re.VERBOSE | re.IGNORECASE,
)


def _not_placeholder(value: str) -> bool:
    return _PLACEHOLDER.fullmatch(value.strip("\"'`")) is None


def _looks_secret(value: str) -> bool:
    # A prose "password: required" has a plain word; a real one mixes classes or is long.
    value = value.strip("\"'`")
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() for c in value)
    return _not_placeholder(value) and (has_digit or has_symbol or len(value) >= 16)


_COOKIE_PAIR = re.compile(r"[\w.-]+=([^;\s]{8,})")


def _has_cookie_value(header: str) -> bool:
    # Greedy header capture + a second pass keeps the scan linear (no lazy backtracking).
    return any(_not_placeholder(m.group(1)) for m in _COOKIE_PAIR.finditer(header))


def _has_digit(value: str) -> bool:
    return any(c.isdigit() for c in value)


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    # Decides on the pattern's last group (the candidate secret value) when present.
    accept: Callable[[str], bool] | None = None

    def matches(self, text: str) -> bool:
        for match in self.pattern.finditer(text):
            if self.accept is None or self.accept(match.group(match.lastindex or 0)):
                return True
        return False


# A field or variable whose name says it holds a secret (API_KEY, db_password, authToken).
_NAMED = (
    r"(?<![\w.-])[A-Za-z0-9_.-]*?(?:password|passwd|passphrase|secret|token|api[_-]?key|apikey"
    r"|access[_-]?key|private[_-]?key|signing[_-]?key|auth[_-]?key|credentials?)(?![\w-])[\"']?"
)


def _rule(kind: str, pattern: str, accept: Callable[[str], bool] | None = None) -> _Rule:
    return _Rule(kind, re.compile(pattern), accept)


_RULES: tuple[_Rule, ...] = (
    _rule("private_key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
    _rule("aws_access_key_id", r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])"),
    _rule(
        "aws_secret_access_key",
        r"(?i)aws.{0,20}?secret.{0,20}?[:=]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
    ),
    _rule("gcp_api_key", r"(?<![\w-])AIza[0-9A-Za-z_-]{35}(?![\w-])"),
    _rule("gcp_oauth_token", r"(?<![\w-])ya29\.[0-9A-Za-z_-]{20,}"),
    _rule("gcp_client_secret", r"(?<![\w-])GOCSPX-[0-9A-Za-z_-]{20,}"),
    _rule(
        "azure_key",
        r"(?i)(?:AccountKey|SharedAccessKey|SharedAccessSignature)\s*=\s*([^;\s\"']{20,})",
    ),
    _rule("azure_sas", r"[?&]sig=([A-Za-z0-9%+/=]{20,})"),
    _rule("jwt", r"(?<![\w-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    _rule("bearer_token", r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{16,}=*)", _has_digit),
    _rule("basic_auth", r"(?i)\bauthorization\s*:\s*basic\s+[A-Za-z0-9+/]{8,}=*"),
    _rule(
        "url_credentials",
        r"(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s:/?#@]{1,256}:([^\s/?#@]{1,256})@",
        _not_placeholder,
    ),
    _rule("github_token", r"(?<![\w-])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_\w{22,})"),
    _rule("gitlab_token", r"(?<![\w-])glpat-[A-Za-z0-9_-]{20,}"),
    _rule("slack_token", r"(?<![\w-])xox[abposr]-[A-Za-z0-9-]{10,}"),
    _rule("slack_webhook", r"hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{16,}"),
    _rule("stripe_key", r"(?<![\w-])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    _rule("ai_api_key", r"(?<![\w-])sk-(?:ant-|proj-)?[A-Za-z0-9_-]{32,}", _has_digit),
    _rule("npm_token", r"(?<![\w-])npm_[A-Za-z0-9]{36}(?![\w-])"),
    _rule("sendgrid_key", r"(?<![\w-])SG\.[\w-]{20,}\.[\w-]{20,}"),
    _rule(
        "session_cookie",
        r"(?i)\b(?:set-)?cookie\s*:([^\n]{0,1024})",
        _has_cookie_value,
    ),
    _rule(
        "session_id",
        r"(?i)\b(?:JSESSIONID|PHPSESSID|ASP\.NET_SessionId|connect\.sid|session_?id|sessionid"
        r"|_session|session_token)\s*=\s*([A-Za-z0-9%._+/=-]{8,})",
        _not_placeholder,
    ),
    _rule("odbc_password", r"(?i)(?:^|;)\s*(?:password|pwd)\s*=\s*([^;\s]+)", _not_placeholder),
    _rule("secret_assignment", r"(?i)" + _NAMED + r"\s*=\s*([^\s,;]{4,})", _not_placeholder),
    _rule("secret_field", r"(?i)" + _NAMED + r"\s*:\s*([^\s,;]{6,})", _looks_secret),
)

KINDS: tuple[str, ...] = tuple(rule.kind for rule in _RULES)


def find_secret(text: str) -> str | None:
    """The kind of the first secret found in ``text`` (never the secret), or None."""
    for rule in _RULES:
        if rule.matches(text):
            return rule.kind
    return None


def capture_texts(payload: Payload, evidence: Evidence) -> Iterator[str]:
    """Every free-form string of a capture that must be screened before it is stored."""
    for component in payload.components:
        yield component.component_id
        yield component.text
    yield payload.primary_event.type_ref
    for citation in payload.citations:
        yield citation.citation_id
        yield citation.source_ref
        yield citation.locator.scheme
        yield citation.locator.value
    if payload.reconciliation is not None:
        yield from payload.reconciliation.family_refs
    yield evidence.evidence_ref
    if evidence.attestation is not None:
        yield evidence.attestation
