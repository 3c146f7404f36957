"""Constructive: staggered rows in rectangles of several aspect ratios (w + h = 2), radii from an LP."""

from innolab.tasks.solvers.circles import run_lp_pattern

if __name__ == "__main__":
    boxes = [(1.0 + d, 1.0 - d) for d in (0.0, 0.05, 0.1, 0.15, 0.2)]
    run_lp_pattern("circles-in-rectangle-21", n=21, rows=5, boxes=boxes)
