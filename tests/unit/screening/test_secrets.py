"""The secret screen: what it flags, what ordinary prose it leaves alone."""

from __future__ import annotations

import time

import pytest
from engram_memory.contract.inputs import CaptureArgs
from engram_memory.screening import capture_texts, find_secret
from engram_memory.screening.secrets import KINDS

from tests.fixtures import contract_fixtures as fx

# Test values are assembled from parts so that this file itself holds no live-looking secret.
AWS_ID = "AKIA" + "IOSFODNN7EXAMPLE"
JWT = "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0" + ".dozjgNryP4J3jVmNHl0w5N_XgL0"

SECRETS = [
    ("aws_access_key_id", f"the deploy user key is {AWS_ID} in eu-west-1"),
    ("aws_access_key_id", "temporary ASIA" + "ZZ3EXAMPLE4KEY56 issued"),
    ("aws_secret_access_key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("private_key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA..."),
    ("private_key", "-----BEGIN OPENSSH PRIVATE KEY-----"),
    ("private_key", "-----BEGIN PGP PRIVATE KEY BLOCK-----"),
    ("jwt", f"session token {JWT}"),
    ("bearer_token", "Authorization: Bearer abc123def456ghi789jkl0"),
    ("basic_auth", "Authorization: Basic dXNlcjpwYXNzd29yZA=="),
    ("url_credentials", "curl https://admin:hunter2@api.example.com/v1"),
    ("url_credentials", "postgres://app:s3cretpw@db.internal:5432/app"),
    ("url_credentials", "mongodb+srv://user:Pa55word@cluster0.mongodb.net/test"),
    ("odbc_password", "Server=tcp:db.example.net;Database=app;User Id=u;Password=Sup3r!;"),
    ("secret_assignment", "DB_PASSWORD=correcthorse"),
    ("secret_assignment", "export API_KEY=abcd1234efgh"),
    ("secret_assignment", "SLACK_BOT_TOKEN = 'abc-def-123'"),
    ("secret_field", "client_secret: s3cr3t-value-here"),
    ("secret_field", '{"password": "hunter2!"}'),
    ("session_cookie", "Set-Cookie: session=0123456789abcdef; HttpOnly; Secure"),
    ("session_cookie", "Cookie: theme=dark; sid=abcdef0123456789"),
    ("session_id", "JSESSIONID=ABCDEF0123456789ABCDEF"),
    ("github_token", "ghp_" + "a1B2" * 9),
    ("github_token", "github_pat_" + "11ABCDEFG0" * 3),
    ("gitlab_token", "glpat-" + "x1y2z3" * 4),
    ("slack_token", "xoxb-" + "123456789012-abcdefghij"),
    ("slack_webhook", "https://hooks.slack.com/services/T0001/B0002/" + "abcdefgh12345678"),
    ("stripe_key", "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"),
    ("gcp_api_key", "AIza" + "SyD-abcdefghijklmnopqrstuvwxyz01234"),
    ("gcp_oauth_token", "ya29." + "a0AfH6SMBx1234567890abcdef"),
    ("azure_key", "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=" + "Ab1+" * 11 + "=="),
    ("azure_sas", "https://acct.blob.core.windows.net/c/f?sv=2022&sig=" + "AbCdEf0123456789%2Bxyz"),
    ("ai_api_key", "sk-proj-" + "a1B2c3D4" * 5),
    ("npm_token", "npm_" + "a1B2c3" * 6),
    ("gcp_client_secret", "GOCSPX-" + "abcDEF123456ghiJKL7890"),
    ("sendgrid_key", "SG." + "abcdefghij0123456789ab" + "." + "x" * 43),
]

PROSE = [
    "The password policy requires 12 characters.",
    "We use a token bucket rate limiter with 100 tokens per second.",
    "content_digest is sha256:" + "ab" * 32,
    "request 123e4567-e89b-12d3-a456-426614174000 failed with a timeout",
    "Rotate the secret every 90 days via Secrets Manager.",
    "The API key must be sent in the x-api-key header.",
    "Set max_tokens=4096 and temperature=0.2 for summaries.",
    "Password: required",
    "password=${DB_PASSWORD}",
    "password = os.environ['DB_PASSWORD']",
    "postgres://user:<password>@host/db",
    "Use a bearer token in the Authorization header.",
    "token_type=bearer",
    "See https://wiki.example.com/runbooks/ingest for details.",
    "record " + fx.RECORD_ID + " came from " + fx.CANDIDATE_ID,
    "secret_name=prod/db/main",
    "The private key never leaves KMS; the public key is in the JWKS.",
    "Set the cookie SameSite attribute to Lax.",
    "git clone git@github.com:org/repo.git",
    "The meeting moved to 12:30:45 and the service listens on host:8080.",
    "passwords: must be rotated",
    "secret: confidential",
    "The JWT header starts with eyJ and has three parts.",
    "Never commit .env files; store API keys in the vault.",
    "Connection pooling: postgres://db.internal:5432/app (credentials via IAM).",
]


@pytest.mark.parametrize(
    ("kind", "text"), SECRETS, ids=[f"{kind}-{i}" for i, (kind, _) in enumerate(SECRETS)]
)
def test_each_kind_of_secret_is_detected_by_name(kind: str, text: str) -> None:
    assert find_secret(text) == kind


def test_every_detector_is_exercised_by_a_positive_example() -> None:
    assert {kind for kind, _ in SECRETS} == set(KINDS)


@pytest.mark.parametrize("text", PROSE)
def test_ordinary_technical_prose_is_not_flagged(text: str) -> None:
    assert find_secret(text) is None


def test_the_answer_names_the_kind_never_the_secret() -> None:
    kind = find_secret(f"key {AWS_ID}")
    assert kind is not None
    assert AWS_ID not in kind


@pytest.mark.parametrize(
    "text",
    [
        "word " * 13_000 + ":" * 500 + "=" * 500 + "a" * 500,
        "cookie: " * 8_000,
        "password" * 8_000,
        "a" * 65_536,
        "x://" * 16_000,
        "Bearer " * 9_000,
    ],
    ids=["prose", "cookies", "names", "run", "schemes", "bearers"],
)
def test_a_maximal_component_text_is_screened_quickly(text: str) -> None:
    # A bound against catastrophic backtracking (seconds to hours), not a speed target:
    # 1 s was crossed at 1.05 s on a machine at load 8.
    start = time.perf_counter()
    find_secret(text)
    assert time.perf_counter() - start < 3.0


def test_capture_texts_covers_every_free_form_string() -> None:
    args = fx.valid_capture_args(text="context text", decision_text="decision text")
    args["payload"]["reconciliation"] = {"family_refs": ["fam-a"]}
    args["evidence"]["attestation"] = "attested by ci"
    model = CaptureArgs.model_validate(args)
    texts = set(capture_texts(model.payload, model.evidence))
    expected = {"context text", "decision text", "fam-a", "attested by ci", "evidence:adr-0007",
                "repo:platform", "docs/adr/0007-ingest-retries.md", "event:decision",
                "https://wiki.example.com/runbooks/ingest", "wiki:ops", "path", "url"}
    assert expected <= texts


def test_a_secret_in_a_locator_is_found_through_capture_texts() -> None:
    args = fx.valid_capture_args()
    args["payload"]["citations"][0]["locator"]["value"] = "https://u:p4ss@host.example/x"
    model = CaptureArgs.model_validate(args)
    assert any(find_secret(t) for t in capture_texts(model.payload, model.evidence))
    clean = CaptureArgs.model_validate(fx.valid_capture_args())
    assert not any(find_secret(t) for t in capture_texts(clean.payload, clean.evidence))
