"""Optimisation helpers shared by the known solutions of the built-in tasks (host side; never in a sandbox)."""
