"""Reviewer tests (issue 9)."""
