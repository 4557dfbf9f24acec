"""Test support that ships with the package: the scripted model server."""
