"""Graph colouring: a proper colouring of a graph's vertices; score its number of colours (exact).

Graphs are given by their parameters, never shipped as files: the n × n queen graph (DIMACS's
queenN_N: vertex r·n + c is the square in row r and column c, 0-based; two squares are adjacent
when a queen moves from one to the other: same row, column or diagonal) is generated exactly here,
with n(n − 1)(5n − 1)/3 edges (DIMACS's files list each edge twice); any other graph is its edge
list. Everything is an exact Python or int64 integer; nothing is rounded.

A queen colouring is checked twice, by two independent rules that must agree: every edge of the
generated graph joins two colours, and every colour class holds at most one square of each row,
column, diagonal and anti-diagonal. A disagreement is an error of innolab's, never an accepted
colouring.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from .core import Invalid, Outcome, exact_integer, only_keys, violations

MAX_VERTICES = 100_000
MAX_EDGES = 2_000_000


def queen_edges(n: int) -> np.ndarray:
    """The edges (u < v) of the n × n queen graph, sorted.

    Args:
        n: The board's side.

    Returns:
        An (m, 2) int64 array, m = n(n − 1)(5n − 1)/3.
    """
    v = np.arange(n * n, dtype=np.int64)
    r, c = v // n, v % n
    u, w = np.triu_indices(n * n, 1)
    attack = ((r[u] == r[w]) | (c[u] == c[w]) | (r[u] - c[u] == r[w] - c[w])
              | (r[u] + c[u] == r[w] + c[w]))
    return np.stack([u[attack], w[attack]], axis=1).astype(np.int64)


def queen_edge_count(n: int) -> int:
    """The number of edges of the n × n queen graph, n(n − 1)(5n − 1)/3 (exact)."""
    return n * (n - 1) * (5 * n - 1) // 3


def _graph(graph: dict[str, Any]) -> tuple[int, np.ndarray]:
    """(vertices, edges) of a graph's parameters: {"kind": "queen", "n"} or {"kind": "edges"}."""
    kind = graph.get("kind")
    if kind == "queen":
        n = int(graph["n"])
        if not 1 <= n <= 300:
            raise Invalid(f"graph: a queen graph's side must lie in [1, 300], got {n}")
        edges = queen_edges(n)
        if len(edges) != queen_edge_count(n):  # the generator against the closed form
            raise Invalid(f"graph: generated {len(edges)} edges for queen{n}_{n}, expected "
                          f"{queen_edge_count(n)} (an error of innolab's, not the submission's)")
        return n * n, edges
    if kind == "edges":
        vertices = int(graph["vertices"])
        edges = np.array(graph["edges"], dtype=np.int64).reshape(-1, 2)
        return vertices, edges
    raise Invalid(f"graph: kind must be 'queen' or 'edges', got {kind!r}")


def _colours(data: dict[str, Any], vertices: int) -> tuple[list[int], int]:
    """The submission's colours and stated count, checked for types, length and range."""
    only_keys(data, ("colours", "num_colours"))
    stated = data["num_colours"]
    stated = exact_integer(stated, "num_colours", 40)
    row = data["colours"]
    if not isinstance(row, list) or len(row) != vertices:
        got = f"{len(row)} entries" if isinstance(row, list) else type(row).__name__
        raise Invalid(f"colours must be a list of {vertices} integers (one per vertex), got {got}")
    row = [exact_integer(c, f"colours[{i}]", 40) for i, c in enumerate(row)]
    out_of_range = [f"colours[{i}] = {c}" for i, c in enumerate(row) if not 0 <= c < vertices]
    violations(f"colour range [0, {vertices})", out_of_range)
    return row, stated


def graph_colouring(data: dict[str, Any], graph: dict[str, Any]) -> float:
    """Check a proper colouring; score its number of distinct colours (minimise).

    Args:
        data: The submission: {"colours": [c_0, ..., c_{V-1}], "num_colours": k}, colours
            integers in [0, V), k the number of distinct colours used (a misstated k is refused).
        graph: The graph: {"kind": "queen", "n": n} or {"kind": "edges", "vertices": V,
            "edges": [[u, v], ...]}.

    Returns:
        The number of distinct colours.

    Raises:
        Invalid: The submission breaks a rule (every conflicting edge listed, the first 20).
    """
    vertices, edges = _graph(graph)
    colours, stated = _colours(data, vertices)
    used = len(set(colours))
    if stated != used:
        raise Invalid(f"num_colours states {stated}, but the colouring uses {used} colours")
    c = np.array(colours, dtype=np.int64)
    clash = np.flatnonzero(c[edges[:, 0]] == c[edges[:, 1]])
    violations("proper colouring", [f"vertices {int(edges[i, 0])} and {int(edges[i, 1])} are "
                                    f"adjacent and share colour {int(c[edges[i, 0]])}"
                                    for i in clash])
    if graph.get("kind") == "queen":
        n = int(graph["n"])
        seen: set[tuple[str, int, int]] = set()
        twice = []
        for v, colour in enumerate(colours):
            r, col = divmod(v, n)
            for line, key in (("row", r), ("column", col), ("diagonal", r - col),
                              ("anti-diagonal", r + col)):
                if (line, key, colour) in seen:
                    twice.append(f"colour {colour} twice on {line} {key}")
                seen.add((line, key, colour))
        if twice:  # the edge list passed it: the two rules disagree
            raise Invalid("innolab's two queen-graph checks disagree (an error of innolab's, "
                          f"the colouring is not accepted): {twice[:3]}")
    return float(used)


# ---------------------------------------------------------------------------- outcome descriptors

COLOURING_SCALE = (
    "graph colouring: the colour classes as a partition of the vertices, up to renaming the "
    "colours; the distance is 100 × the share of vertices that must change class to turn one "
    "partition into the other under the best matching of classes (Gusfield's partition "
    "distance): 0 the same colouring relabelled, near 100 unrelated ones"
)


def _describe_colouring(data: dict[str, Any], params: dict[str, Any]) -> np.ndarray:
    vertices, _ = _graph(params["graph"])
    colours, _ = _colours(data, vertices)
    _, labels = np.unique(np.array(colours, dtype=np.int64), return_inverse=True)
    return labels.astype(np.int64)


def _partition_distance(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.optimize import linear_sum_assignment

    if len(a) != len(b):
        raise Invalid("colourings of different graphs cannot be compared")
    table = np.zeros((int(a.max()) + 1, int(b.max()) + 1), dtype=np.int64)
    np.add.at(table, (a, b), 1)
    rows, cols = linear_sum_assignment(-table)
    kept = int(table[rows, cols].sum())
    return float(100 * (len(a) - kept) / len(a))


OUTCOMES = {"graph_colouring": Outcome(_describe_colouring, _partition_distance,
                                       COLOURING_SCALE)}

# ------------------------------------------------------------------------------- hostile inputs

CHECKS = ("graph_colouring",)


def _hostile(params: dict[str, Any]) -> dict[str, str]:
    vertices, edges = _graph(params["graph"])
    distinct = list(range(vertices))  # proper for every graph: one colour per vertex
    good = {"colours": distinct, "num_colours": vertices}

    def text(**change: Any) -> str:
        return json.dumps({**good, **change})

    clash = list(distinct)
    if len(edges):
        clash[int(edges[0, 1])] = clash[int(edges[0, 0])]
    slot = text(colours=["\x00", *distinct[1:]])
    return {
        "an improper colouring (two adjacent vertices share a colour)": text(
            colours=clash, num_colours=len(set(clash))),
        "a misstated colour count": text(num_colours=vertices - 1),
        "a reported score": json.dumps({**good, "score": 1}),
        "a vertex missing": text(colours=distinct[:-1]),
        "a vertex too many": text(colours=[*distinct, 0]),
        "a float colour": slot.replace('"\\u0000"', "0.0"),
        "a NaN colour": slot.replace('"\\u0000"', "NaN"),
        "an Infinity colour": slot.replace('"\\u0000"', "Infinity"),
        "a string colour": slot.replace('"\\u0000"', '"0"'),
        "a boolean colour": slot.replace('"\\u0000"', "false"),
        "a negative colour": slot.replace('"\\u0000"', "-1"),
        "a colour beyond the vertices": slot.replace('"\\u0000"', str(vertices)),
        "an integer of 400 digits": slot.replace('"\\u0000"', "1" + "0" * 400),
        "a float colour count": text(num_colours=float(vertices)),
        "the count missing": json.dumps({"colours": distinct}),
        "colours not a list": text(colours={"0": 0}),
    }


HOSTILE = {"graph_colouring": _hostile}
