"""Desktop backends."""
