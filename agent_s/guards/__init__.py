"""The four locks every surface of agent-s shares, one module per lock.

A feature that writes a file from recorded or model data, opens a server or a port, runs text or
code a model wrote, or marks anything "verified" takes its lock from here instead of writing its
own check:

- ``files``: a path read from a recorded file stays inside its folder, and no write follows a
  symlink (temporary file in the output folder, atomic rename; a symlinked output folder is
  refused).
- ``servers``: every server of agent-s binds to loopback and asks who is there (a token, the Host
  header and the Origin header) before it answers.
- ``trust``: "verified" comes only from a check the user or the evaluator gave; what a model
  wrote, and what a file says, is data: stored unverified, quoted and bounded in every prompt.
- ``content``: text from the screen (window titles, accessibility names, OCR, code output,
  memory) goes into every prompt inside a frame it cannot close, as content, never
  instructions.
- containment of model-written code and checks lives in ``agent_s.coding.containment`` (bubblewrap
  where it works, by default).

May use: the standard library, each other and ``agent_s.models``' message types (redaction
reads requests). Every stage may import them; they import no stage.
"""
