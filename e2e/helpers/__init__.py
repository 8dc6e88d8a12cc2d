"""Shared helpers for the single-node end-to-end suites (raw RESP client, server processes)."""
