"""Typed actions."""
