"""Marks on screenshots.

``drawing`` (every picture drawn for people: the report's overlays, the annotated grounding
screenshot), ``setofmarks`` (numbered marks on the controls of the screenshot the model is
sent, which it may name instead of describing them).

May use: actions, desktop, grounding, images. Used by: the loop, record, safety, report, cli.
"""

from agent_s._moved import forward

# what the old module of this name held, for one release (agent_s._moved)
__getattr__ = forward(__name__, "agent_s.marks.drawing")
