"""Test support that ships with the package: the scripted model server.

``ScriptedModelServer`` (``scripted_server``) answers OpenAI Chat Completions, OpenAI Responses
and Anthropic Messages requests from a script of steps built with ``scripted_replies``.
Command line: ``python -m agent_s.testing serve SCRIPT.json``.
"""
