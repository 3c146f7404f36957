"""Graph colouring of the queen graphs: first fit, DSATUR and tabu search (gcol, Lewis's library)."""

from __future__ import annotations

import random

import numpy as np

from innolab.tasks.solvers.cli import parse_args, write
from innolab.tasks.taskkit.colouring import queen_edges

TABU_ITERATIONS = 200_000
QUICK_TABU_ITERATIONS = 5_000


def queen_graph(n: int):
    """The n x n queen graph as a networkx graph (vertex r*n + c)."""
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(range(n * n))
    graph.add_edges_from(queen_edges(n).tolist())
    return graph


def submission(colours: list[int]) -> dict:
    """The submission of a colouring: the colours renumbered 0..k-1 in order of first use, and k."""
    order = {c: i for i, c in enumerate(dict.fromkeys(colours))}
    renamed = [order[c] for c in colours]
    return {"colours": renamed, "num_colours": len(order)}


def first_fit(n: int) -> list[int]:
    """Greedy in vertex order: each vertex takes the smallest colour none of its coloured neighbours has."""
    edges = queen_edges(n)
    neighbours = [[] for _ in range(n * n)]
    for u, v in edges.tolist():
        neighbours[u].append(v)
        neighbours[v].append(u)
    colours = [-1] * (n * n)
    for v in range(n * n):
        taken = {colours[u] for u in neighbours[v] if colours[u] >= 0}
        colours[v] = next(c for c in range(n * n) if c not in taken)
    return colours


def run_first_fit(task_id: str, n: int) -> None:
    args = parse_args("first fit in vertex order")
    write(args.out, submission(first_fit(n)), task_id)


def run_dsatur(task_id: str, n: int) -> None:
    import gcol

    args = parse_args("DSATUR (gcol)")
    random.seed(args.seed)
    np.random.seed(args.seed)
    found = gcol.node_coloring(queen_graph(n), strategy="dsatur")
    write(args.out, submission([found[v] for v in range(n * n)]), task_id)


def run_tabu(task_id: str, n: int) -> None:
    import gcol

    args = parse_args("DSATUR, then tabu search over improper colourings (gcol, opt_alg=2)")
    random.seed(args.seed)
    np.random.seed(args.seed)
    iterations = QUICK_TABU_ITERATIONS if args.quick else TABU_ITERATIONS
    found = gcol.node_coloring(queen_graph(n), strategy="dsatur", opt_alg=2, it_limit=iterations)
    write(args.out, submission([found[v] for v in range(n * n)]), task_id)
