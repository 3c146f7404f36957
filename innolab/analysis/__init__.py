"""Analyses of many runs: pure functions on DataFrames, never live objects."""
