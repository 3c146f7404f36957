"""Kissing configurations in ℤ^d: the D_d root system, and greedy code search over short vectors."""

from __future__ import annotations

import time
from itertools import combinations, product

import numpy as np

from innolab.tasks.solvers.cli import parse_args, write


def cross_polytope(dim: int) -> np.ndarray:
    """±e_i: 2d vectors of norm 1 at mutual squared distance ≥ 2."""
    eye = np.eye(dim, dtype=np.int64)
    return np.vstack([eye, -eye])


def root_system_d(dim: int) -> np.ndarray:
    """The minimal vectors of the D_d lattice, ±e_i ± e_j: 2d(d − 1) vectors of norm² 2, mutual distance² ≥ 2."""
    vectors = []
    for i, j in combinations(range(dim), 2):
        for si, sj in product((1, -1), repeat=2):
            v = np.zeros(dim, dtype=np.int64)
            v[i], v[j] = si, sj
            vectors.append(v)
    return np.array(vectors)


def weight_four_candidates(dim: int) -> np.ndarray:
    """Norm² 4 vectors: ±2e_i and every ±1 vector with exactly four non-zero entries."""
    candidates = [2 * row for row in cross_polytope(dim)]
    for support in combinations(range(dim), 4):
        for signs in product((1, -1), repeat=4):
            v = np.zeros(dim, dtype=np.int64)
            v[list(support)] = signs
            candidates.append(v)
    return np.array(candidates)


def greedy_code(candidates: np.ndarray, min_distance2: int, order: np.ndarray) -> np.ndarray:
    """Scan candidates in `order`, keeping each one at squared distance ≥ min_distance2 from all kept so far."""
    kept: list[int] = []
    kept_vectors = np.zeros((0, candidates.shape[1]), dtype=np.int64)
    for index in order:
        v = candidates[index]
        if kept_vectors.size == 0 or ((kept_vectors - v) ** 2).sum(axis=1).min() >= min_distance2:
            kept.append(index)
            kept_vectors = candidates[kept]
    return kept_vectors


def run_baseline(task_id: str, dim: int) -> None:
    args = parse_args("cross-polytope")
    write(args.out, {"vectors": cross_polytope(dim).tolist()}, task_id)


def run_root_system(task_id: str, dim: int) -> None:
    args = parse_args("D_d root system")
    write(args.out, {"vectors": root_system_d(dim).tolist()}, task_id)


def run_greedy(task_id: str, dim: int) -> None:
    """Randomised greedy over norm² 4 candidates (min distance² 4), restarted until the time limit."""
    args = parse_args("randomised greedy code search", default_time_limit=60.0)
    rng = np.random.default_rng(args.seed)
    candidates = weight_four_candidates(dim)
    deadline = time.monotonic() + (1e9 if args.quick else args.time_limit)
    best = np.zeros((0, dim), dtype=np.int64)
    for _ in range(2 if args.quick else 1_000_000):
        if time.monotonic() > deadline:
            break
        code = greedy_code(candidates, 4, rng.permutation(len(candidates)))
        if len(code) > len(best):
            best = code
    write(args.out, {"vectors": best.tolist()}, task_id)
