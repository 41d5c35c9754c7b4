"""Fixtures of the expiry sweeper tests (on top of the shared ``aws`` fixture)."""

from __future__ import annotations

import pytest

from tests.integration.conftest import AwsEnv
from tests.integration.expiry.support import Expiry, wire


@pytest.fixture
def expiry(aws: AwsEnv) -> Expiry:
    """A tenant wired with a pinned clock and the test approval gate."""
    return wire(aws)
