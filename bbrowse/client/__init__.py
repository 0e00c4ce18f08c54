"""Async client of the Browser Instance Control Service (being built)."""
