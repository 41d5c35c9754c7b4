"""Backup bundles: the format, its offline verification, export and restore (docs/backup.md)."""
