"""Point-configuration solvers: min–max distance ratio and Heilbronn (SLSQP epigraphs, annealing)."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
from scipy.optimize import minimize

from innolab.tasks.solvers.cli import as_rows, multistart, parse_args, score, write

SQRT3 = math.sqrt(3.0)
TRIANGLE = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, SQRT3 / 2]])


# --------------------------------------------------------------------------- min–max distance ratio


def distance_ratio(points: np.ndarray) -> float:
    i, j = np.triu_indices(len(points), 1)
    d2 = ((points[i] - points[j]) ** 2).sum(axis=1)
    return float(d2.max() / d2.min())


def hex_patch(n: int, centre: tuple[float, float]) -> np.ndarray:
    """The n points of the unit triangular lattice nearest to `centre` (ties broken by angle)."""
    ks = range(-6, 7)
    lattice = np.array([[a + b / 2, b * SQRT3 / 2] for a in ks for b in ks])
    offset = lattice - np.asarray(centre)
    key = np.lexsort((np.arctan2(offset[:, 1], offset[:, 0]), np.round((offset**2).sum(axis=1), 9)))
    return lattice[key[:n]]


def minmax_slsqp(p0: np.ndarray, max_iter: int = 300) -> np.ndarray:
    """min t over (points, t) s.t. every squared distance lies in [1, t]: the ratio (d_max/d_min)² is t."""
    n = len(p0)
    i, j = np.triu_indices(n, 1)
    scale = math.sqrt(((p0[i] - p0[j]) ** 2).sum(axis=1).min())
    z0 = np.append((p0 / scale).ravel(), distance_ratio(p0))

    def d2(z: np.ndarray) -> np.ndarray:
        p = z[:-1].reshape(n, 2)
        return ((p[i] - p[j]) ** 2).sum(axis=1)

    def d2_jac(z: np.ndarray) -> np.ndarray:
        p = z[:-1].reshape(n, 2)
        diff = p[i] - p[j]
        jac = np.zeros((len(i), 2 * n + 1))
        rows = np.arange(len(i))
        for c in range(2):
            jac[rows, 2 * i + c] = 2 * diff[:, c]
            jac[rows, 2 * j + c] = -2 * diff[:, c]
        return jac

    def upper_jac(z: np.ndarray) -> np.ndarray:
        jac = -d2_jac(z)
        jac[:, -1] = 1.0
        return jac

    constraints = [
        {"type": "ineq", "fun": lambda z: z[-1] - d2(z), "jac": upper_jac},
        {"type": "ineq", "fun": lambda z: d2(z) - 1.0, "jac": d2_jac},
    ]
    res = minimize(lambda z: z[-1], z0, jac=lambda z: np.eye(len(z))[-1], method="SLSQP",
                   constraints=constraints, options={"maxiter": max_iter, "ftol": 1e-14})
    return res.x[:-1].reshape(n, 2)


# ------------------------------------------------------------------------------- Heilbronn problems


def triples(n: int) -> np.ndarray:
    return np.array(list(combinations(range(n), 3)))


def signed_double_areas(points: np.ndarray, t: np.ndarray) -> np.ndarray:
    a, b, c = points[t[:, 0]], points[t[:, 1]], points[t[:, 2]]
    return (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])


def hull_area(points: np.ndarray) -> float:
    from scipy.spatial import ConvexHull

    return float(ConvexHull(points).volume)


def heilbronn_value(points: np.ndarray, region: str) -> float:
    """Smallest triangle area over the normaliser: the triangle's area, or the points' convex-hull area."""
    smallest = np.abs(signed_double_areas(points, triples(len(points)))).min() / 2
    return float(smallest / (SQRT3 / 4 if region == "triangle" else hull_area(points)))


def in_region(points: np.ndarray, region: str) -> np.ndarray:
    x, y = points[..., 0], points[..., 1]
    if region == "triangle":
        return (y >= 0) & (SQRT3 * x - y >= 0) & (SQRT3 * (1 - x) - y >= 0)
    return x * x + y * y <= 1.0


def sample_region(rng: np.random.Generator, n: int, region: str) -> np.ndarray:
    if region == "triangle":
        u, v = rng.random(n), rng.random(n)
        flip = u + v > 1
        u[flip], v[flip] = 1 - u[flip], 1 - v[flip]
        return TRIANGLE[0] + np.outer(u, TRIANGLE[1] - TRIANGLE[0]) + np.outer(v, TRIANGLE[2] - TRIANGLE[0])
    angle, radius = rng.uniform(0, 2 * np.pi, n), np.sqrt(rng.random(n))
    return np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])


def anneal(points: np.ndarray, region: str, steps: int, rng: np.random.Generator, step0: float = 0.1,
           temperature0: float = 0.02) -> np.ndarray:
    """Simulated annealing: move one point by a shrinking Gaussian step inside the region; accept by Metropolis."""
    current = points.copy()
    value = heilbronn_value(current, region)
    best, best_value = current.copy(), value
    for step in range(steps):
        frac = step / max(1, steps - 1)
        scale, temperature = step0 * (1 - frac) + 1e-4, temperature0 * (1 - frac) + 1e-9
        candidate = current.copy()
        k = rng.integers(len(current))
        candidate[k] += rng.normal(0, scale, 2)
        if not in_region(candidate[k], region):
            continue
        new = heilbronn_value(candidate, region)
        if new >= value or rng.random() < math.exp((new - value) / (temperature * max(value, 1e-12))):
            current, value = candidate, new
            if value > best_value:
                best, best_value = current.copy(), value
    return best


def heilbronn_slsqp(p0: np.ndarray, region: str, max_iter: int = 300) -> np.ndarray:
    """Maximise t s.t. s_k·A_k(points) ≥ t for every triple (signs s_k frozen at the start), points in the region.

    For the convex-hull variant the region is the unit disk and the value is renormalised by the hull afterwards.
    """
    n = len(p0)
    t = triples(n)
    signs = np.sign(signed_double_areas(p0, t))
    signs[signs == 0] = 1.0
    z0 = np.append(p0.ravel(), np.abs(signed_double_areas(p0, t)).min())

    def areas(z: np.ndarray) -> np.ndarray:
        return signs * signed_double_areas(z[:-1].reshape(n, 2), t) - z[-1]

    def areas_jac(z: np.ndarray) -> np.ndarray:
        p = z[:-1].reshape(n, 2)
        a, b, c = p[t[:, 0]], p[t[:, 1]], p[t[:, 2]]
        jac = np.zeros((len(t), 2 * n + 1))
        rows = np.arange(len(t))
        # d/d(points) of (b−a)×(c−a)
        partials = {
            (0, 0): b[:, 1] - c[:, 1], (0, 1): c[:, 0] - b[:, 0],
            (1, 0): c[:, 1] - a[:, 1], (1, 1): a[:, 0] - c[:, 0],
            (2, 0): a[:, 1] - b[:, 1], (2, 1): b[:, 0] - a[:, 0],
        }
        for (vertex, coord), value in partials.items():
            np.add.at(jac, (rows, 2 * t[:, vertex] + coord), signs * value)
        jac[:, -1] = -1.0
        return jac

    if region == "triangle":
        def inside(z: np.ndarray) -> np.ndarray:
            p = z[:-1].reshape(n, 2)
            return np.concatenate([p[:, 1], SQRT3 * p[:, 0] - p[:, 1], SQRT3 * (1 - p[:, 0]) - p[:, 1]])
    else:
        def inside(z: np.ndarray) -> np.ndarray:
            p = z[:-1].reshape(n, 2)
            return 1.0 - (p**2).sum(axis=1)

    res = minimize(lambda z: -z[-1], z0, jac=lambda z: -np.eye(len(z))[-1], method="SLSQP",
                   constraints=[{"type": "ineq", "fun": areas, "jac": areas_jac}, {"type": "ineq", "fun": inside}],
                   options={"maxiter": max_iter, "ftol": 1e-15})
    return res.x[:-1].reshape(n, 2)


def project_inside(points: np.ndarray, region: str) -> np.ndarray:
    """Nudge points that SLSQP left a rounding error outside the region back in (towards the centroid)."""
    centre = TRIANGLE.mean(axis=0) if region == "triangle" else np.zeros(2)
    out = points.copy()
    for k in range(len(out)):
        shrink = 0.0
        while not in_region(out[k], region):
            shrink = shrink * 2 or 1e-15
            out[k] = centre + (points[k] - centre) * (1 - shrink)
    return out


# ------------------------------------------------------------------------ the solve.py entry points


def _submit(task_id: str, out: str, points: np.ndarray, region: str | None = None) -> None:
    """Write the points; for a bounded region, first pull stray points inside until the exact check passes."""

    candidate = points
    if region is not None:
        candidate = project_inside(points, region)
        centre = TRIANGLE.mean(axis=0) if region == "triangle" else np.zeros(2)
        shrink = 1e-15
        while score(task_id, {"points": as_rows(candidate)}) is None and shrink < 1e-6:
            candidate = centre + (points - centre) * (1 - shrink)
            shrink *= 2
    write(out, {"points": as_rows(candidate)}, task_id)


def run_grid_baseline(task_id: str, side: int) -> None:
    """Trivial baseline for min–max distance ratio: a side × side square grid."""

    args = parse_args("square grid")
    grid = np.array([[a, b] for a in range(side) for b in range(side)], dtype=float)
    _submit(task_id, args.out, grid)


def run_hex_patch(task_id: str, n: int) -> None:
    """Constructive: the n lattice points nearest to a vertex, an edge midpoint or a cell centre; best ratio wins."""

    args = parse_args("triangular-lattice patch")
    centres = [(0.0, 0.0), (0.5, 0.0), (0.5, SQRT3 / 6), (0.25, SQRT3 / 4), (0.5, SQRT3 / 3)]
    best = min((hex_patch(n, c) for c in centres), key=distance_ratio)
    _submit(task_id, args.out, best)


def run_minmax_slsqp(task_id: str, n: int) -> None:
    """Multi-start SLSQP on the epigraph form, from jittered lattice patches and random clouds."""


    args = parse_args("multi-start SLSQP epigraph", default_time_limit=60.0)
    rng = np.random.default_rng(args.seed)
    count = iter(range(10**9))

    def attempt() -> tuple[np.ndarray, float]:
        k = next(count)
        p0 = hex_patch(n, (0.5, SQRT3 / 6)) + rng.normal(0, 0.15, (n, 2)) if k % 2 else rng.random((n, 2)) * 4
        p = minmax_slsqp(p0)
        return p, distance_ratio(p) if np.isfinite(p).all() else math.inf

    best = multistart(attempt, args.quick, 4, args.time_limit, minimise=True)
    _submit(task_id, args.out, best)


def run_random_baseline(task_id: str, n: int, region: str) -> None:
    """Trivial baseline for the Heilbronn problems: uniform random points in the region (seeded)."""

    args = parse_args("uniform random points")
    _submit(task_id, args.out, sample_region(np.random.default_rng(args.seed), n, region), region)


def run_anneal(task_id: str, n: int, region: str) -> None:
    """Simulated annealing from random starts; the best restart wins."""


    args = parse_args("simulated annealing", default_time_limit=60.0)
    rng = np.random.default_rng(args.seed)
    steps = 1500 if args.quick else 20_000

    def attempt() -> tuple[np.ndarray, float]:
        p = anneal(sample_region(rng, n, region), region, steps, rng)
        return p, heilbronn_value(p, region)

    _submit(task_id, args.out, multistart(attempt, args.quick, 1, args.time_limit), region)


def run_heilbronn_slsqp(task_id: str, n: int, region: str) -> None:
    """Multi-start SLSQP on the epigraph form (maximise the smallest signed area) from random points."""


    args = parse_args("multi-start SLSQP epigraph", default_time_limit=60.0)
    rng = np.random.default_rng(args.seed)

    def attempt() -> tuple[np.ndarray, float]:
        p = project_inside(heilbronn_slsqp(sample_region(rng, n, region), region), region)
        return p, heilbronn_value(p, region)

    best = multistart(attempt, args.quick, 2, args.time_limit)
    _submit(task_id, args.out, best, region)
