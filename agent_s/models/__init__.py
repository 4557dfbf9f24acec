"""Model providers: one interface, one adapter per API."""
