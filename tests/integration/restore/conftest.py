"""The read-path fixtures (handlers, projector drain, manual clock) for restore tests."""

from tests.integration.read_path.conftest import read_path

__all__ = ["read_path"]
