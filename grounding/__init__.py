"""Grounding."""
