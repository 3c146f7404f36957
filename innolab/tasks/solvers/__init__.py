"""Optimisation helpers shared by the built-in tasks' known solutions (host side, not sandboxed)."""
