"""agent-s: a screenshot-driven desktop automation agent."""

__version__ = "0.1.0"
