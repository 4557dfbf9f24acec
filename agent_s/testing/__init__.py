"""Test support that ships with the package: the scripted model server.

``ScriptedModelServer`` (``scripted_server``) answers OpenAI Chat Completions, OpenAI Responses
and Anthropic Messages requests from a script of steps built with ``scripted_replies``.
Command line: ``python -m agent_s.testing serve SCRIPT.json``.

The prompt-injection suite: ``GullibleModel`` (``gullible``), a script function that obeys any
instruction it reads, and the injected tasks with their effects (``injection``, with the form
window ``webform``), run by tests/test_injection.py and scripts/bench_injection.py.

May use: settings and the package root (test support: nothing of agent-s imports it).
"""
