"""Circle packing: SLSQP, iterated local search, LP radii for fixed centres, exact repair."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.optimize import linprog, minimize


class Packer:
    """SLSQP on (x, y, r[, w]) for n disks in the unit square or, with `half_perimeter`, in a w × (p − w) box."""

    def __init__(self, n: int, half_perimeter: float | None = None) -> None:
        self.n = n
        self.p = half_perimeter
        self.i, self.j = np.triu_indices(n, 1)
        self.m = len(self.i)
        self.size = 3 * n + (1 if half_perimeter else 0)

    def _box(self, z: np.ndarray) -> tuple[float, float]:
        return (z[-1], self.p - z[-1]) if self.p else (1.0, 1.0)

    def constraints(self, z: np.ndarray) -> np.ndarray:
        n = self.n
        x, y, r = z[:n], z[n : 2 * n], z[2 * n : 3 * n]
        w, h = self._box(z)
        dx, dy, rs = x[self.i] - x[self.j], y[self.i] - y[self.j], r[self.i] + r[self.j]
        return np.concatenate([dx * dx + dy * dy - rs * rs, x - r, w - x - r, y - r, h - y - r])

    def jacobian(self, z: np.ndarray) -> np.ndarray:
        n, m, i, j = self.n, self.m, self.i, self.j
        x, y, r = z[:n], z[n : 2 * n], z[2 * n : 3 * n]
        jac = np.zeros((m + 4 * n, self.size))
        k = np.arange(m)
        dx, dy, rs = x[i] - x[j], y[i] - y[j], r[i] + r[j]
        jac[k, i], jac[k, j] = 2 * dx, -2 * dx
        jac[k, n + i], jac[k, n + j] = 2 * dy, -2 * dy
        jac[k, 2 * n + i], jac[k, 2 * n + j] = -2 * rs, -2 * rs
        a = np.arange(n)
        for block, (coord, sign) in enumerate(((0, 1), (0, -1), (1, 1), (1, -1))):
            rows = m + block * n + a
            jac[rows, coord * n + a] = sign
            jac[rows, 2 * n + a] = -1
        if self.p:
            jac[m + n + a, -1] = 1  # w − x − r
            jac[m + 3 * n + a, -1] = -1  # (p − w) − y − r
        return jac

    def objective(self, z: np.ndarray) -> float:
        return -float(z[2 * self.n : 3 * self.n].sum())

    def gradient(self, z: np.ndarray) -> np.ndarray:
        g = np.zeros(self.size)
        g[2 * self.n : 3 * self.n] = -1
        return g

    def bounds(self) -> list[tuple[float, float]]:
        top = self.p or 1.0
        b = [(0.0, top)] * (2 * self.n) + [(0.0, top / 2)] * self.n
        return b + ([(0.0, self.p)] if self.p else [])

    def solve(self, z0: np.ndarray, max_iter: int = 500) -> tuple[np.ndarray, float]:
        """One SLSQP solve; returns (z, sum of radii), the sum 0 when the result is infeasible beyond 1e-9."""
        res = minimize(self.objective, z0, jac=self.gradient, method="SLSQP", bounds=self.bounds(),
                       constraints=[{"type": "ineq", "fun": self.constraints, "jac": self.jacobian}],
                       options={"maxiter": max_iter, "ftol": 1e-10})
        feasible = self.constraints(res.x).min() > -1e-9
        return res.x, (-float(res.fun) if feasible else 0.0)

    def random_start(self, rng: np.random.Generator) -> np.ndarray:
        top = self.p / 2 if self.p else 1.0
        z = np.concatenate([rng.uniform(0.1, 0.9, 2 * self.n) * top, np.full(self.n, 0.05 * top)])
        return np.append(z, top) if self.p else z

    def perturb(self, z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Swap two radii, relocate 1–3 disks, or jiggle every centre; radii shrink a little to reopen room."""
        n, z = self.n, z.copy()
        w, h = self._box(z)
        u = rng.random()
        if u < 0.4:
            a, b = rng.choice(n, 2, replace=False)
            z[2 * n + a], z[2 * n + b] = z[2 * n + b], z[2 * n + a]
            z[2 * n : 3 * n] *= 0.9
        elif u < 0.8:
            k = int(rng.integers(1, 4))
            idx = rng.choice(n, k, replace=False)
            z[idx] = rng.uniform(0.05, 0.95, k) * w
            z[n + idx] = rng.uniform(0.05, 0.95, k) * h
            z[2 * n + idx] = 0.01 * min(w, h)
        else:
            z[: 2 * n] += rng.normal(0, 0.03 * min(w, h), 2 * n)
            z[2 * n : 3 * n] *= 0.9
        return z

    def iterated_local_search(self, rng: np.random.Generator, chain_iterations: int, chains: int | None = None,
                              deadline: float | None = None, starts_per_chain: int = 5,
                              log: Callable[[str], None] | None = None, marks: tuple[float, ...] = (),
                              on_mark: Callable[[int, np.ndarray], None] | None = None) -> tuple[np.ndarray, float]:
        """Chains of perturb-and-resolve from the best of a few random starts; accept only improvements.

        Stops after `chains` chains, or when `deadline` (time.monotonic) passes; the best of all chains wins.
        `on_mark(i, z)` receives the best configuration so far when time.monotonic() passes `marks[i]`.
        """
        best_z, best = self.random_start(rng), 0.0
        done = 0
        pending = list(enumerate(marks))

        def mark(current: np.ndarray, value: float) -> None:
            while pending and time.monotonic() >= pending[0][1]:
                index, _ = pending.pop(0)
                if on_mark:
                    on_mark(index, current if value > best else best_z)

        while (chains is None or done < chains) and (deadline is None or time.monotonic() < deadline):
            current, value = max((self.solve(self.random_start(rng)) for _ in range(starts_per_chain)),
                                 key=lambda t: t[1])
            for _ in range(chain_iterations):
                mark(current, value)
                if deadline is not None and time.monotonic() >= deadline:
                    break
                candidate, score = self.solve(self.perturb(current, rng))
                if score > value + 1e-9:
                    current, value = candidate, score
            done += 1
            if value > best:
                best_z, best = current, value
            if log:
                log(f"chain {done}: {value:.10f} (best {best:.10f})")
        return best_z, best

    def circles(self, z: np.ndarray) -> np.ndarray:
        n = self.n
        return np.column_stack([z[:n], z[n : 2 * n], z[2 * n : 3 * n]])


def lp_radii(centres: np.ndarray, width: float = 1.0, height: float = 1.0) -> np.ndarray:
    """For fixed centres, the radii that maximise Σr: r_i + r_j ≤ d_ij, r_i ≤ distance to each wall, r ≥ 0."""
    n = len(centres)
    i, j = np.triu_indices(n, 1)
    d = np.hypot(*(centres[i] - centres[j]).T)
    a = np.zeros((len(i), n))
    a[np.arange(len(i)), i] = 1
    a[np.arange(len(i)), j] = 1
    walls = np.minimum.reduce([centres[:, 0], width - centres[:, 0], centres[:, 1], height - centres[:, 1]])
    res = linprog(-np.ones(n), A_ub=a, b_ub=d, bounds=[(0, max(0.0, w)) for w in walls], method="highs")
    if not res.success:
        raise RuntimeError(f"LP for radii failed: {res.message}")
    return res.x


def repair(circles: np.ndarray, is_valid: Callable[[np.ndarray], bool]) -> np.ndarray:
    """Shrink every radius by the smallest power-of-two multiple of 1e-16 that makes the packing exactly valid."""
    shrink = 1e-16
    while shrink < 1e-3:
        candidate = circles.copy()
        candidate[:, 2] = np.maximum(0.0, candidate[:, 2] - shrink)
        if is_valid(candidate):
            return candidate
        shrink *= 2
    raise RuntimeError("could not repair the packing by shrinking radii up to 1e-3")


# ------------------------------------------------------------------------ the solve.py entry points


def _exact(task_id: str) -> Callable[[np.ndarray], bool]:
    from innolab.tasks.solvers.cli import as_rows, score

    return lambda c: score(task_id, {"circles": as_rows(c)}) is not None


def _write(task_id: str, out: str, circles: np.ndarray) -> None:
    from innolab.tasks.solvers.cli import as_rows, write

    write(out, {"circles": as_rows(repair(circles, _exact(task_id)))}, task_id)


def run_grid_baseline(task_id: str, n: int, columns: int, rows: int) -> None:
    """Trivial baseline: n equal circles on a columns × rows grid of the unit square."""
    from innolab.tasks.solvers.cli import parse_args

    args = parse_args("equal circles on a grid")
    r = 1 / (2 * max(columns, rows))
    centres = [((2 * c + 1) * r, (2 * k + 1) * r) for k in range(rows) for c in range(columns)][:n]
    _write(task_id, args.out, np.array([[x, y, r] for x, y in centres]))


def staggered_rows(counts: tuple[int, ...], width: float = 1.0, height: float = 1.0) -> np.ndarray:
    """Rows of equally spaced centres at evenly spaced heights; each row spans the full width."""
    centres = []
    for k, count in enumerate(counts):
        centres += [((c + 0.5) / count * width, (k + 0.5) / len(counts) * height) for c in range(count)]
    return np.array(centres)


def run_lp_pattern(task_id: str, n: int, rows: int, boxes: list[tuple[float, float]] | None = None) -> None:
    """Constructive: every split of n into `rows` staggered rows (in each candidate box), radii by LP."""
    from itertools import product

    from innolab.tasks.solvers.cli import parse_args

    args = parse_args("staggered rows with LP radii")
    boxes = boxes or [(1.0, 1.0)]
    base = n // rows
    splits = [c for c in product(range(max(1, base - 2), base + 3), repeat=rows) if sum(c) == n]
    candidates = [(s, b) for b in boxes for s in splits]
    if args.quick:
        candidates = candidates[:12]
    best, best_value = None, -1.0
    for counts, (w, h) in candidates:
        centres = staggered_rows(counts, w, h)
        circles = np.column_stack([centres, lp_radii(centres, w, h)])
        if circles[:, 2].sum() > best_value:
            best, best_value = circles, circles[:, 2].sum()
    _write(task_id, args.out, best)


def run_ils(task_id: str, n: int, half_perimeter: float | None = None, chain_iterations: int = 250,
            default_time_limit: float = 540.0) -> None:
    """Iterated local search over SLSQP optima, two processes in parallel until the time limit."""
    import multiprocessing as mp

    from innolab.tasks.solvers.cli import parse_args

    args = parse_args("iterated local search over SLSQP optima", default_time_limit=default_time_limit,
                      snapshots=True)
    if args.quick:  # deterministic: one short chain in one process
        results = [_ils_worker(n, half_perimeter, args.seed, None, 1, 15)]
    else:
        start = time.monotonic()
        deadline = start + args.time_limit
        snapshots = (task_id, args.snapshot_dir, tuple(args.snapshot_at), start) if args.snapshot_dir else None
        jobs = [(n, half_perimeter, args.seed * 2 + k, deadline, None, chain_iterations, snapshots, k)
                for k in range(2)]
        with mp.Pool(2) as pool:
            results = pool.starmap(_ils_worker, jobs)
    circles, _ = max(results, key=lambda t: t[1])
    _write(task_id, args.out, circles)


def _ils_worker(n: int, half_perimeter: float | None, seed: int, deadline: float | None, chains: int | None,
                chain_iterations: int, snapshots: tuple | None = None, worker: int = 0) -> tuple[np.ndarray, float]:
    """One search process; with `snapshots` (task, folder, seconds, start) it writes its best-so-far packing
    to folder/t<seconds>-w<worker>.json as each time mark passes (what a time-budget curve is made of)."""
    packer = Packer(n, half_perimeter)
    marks: tuple[float, ...] = ()
    on_mark = None
    if snapshots:
        task_id, folder, seconds, start = snapshots
        marks = tuple(start + s for s in seconds)

        def on_mark(index: int, z: np.ndarray) -> None:
            _write(task_id, str(Path(folder) / f"t{seconds[index]:g}-w{worker}.json"), packer.circles(z))

    z, value = packer.iterated_local_search(np.random.default_rng(seed), chain_iterations, chains=chains,
                                            deadline=deadline, marks=marks, on_mark=on_mark)
    return packer.circles(z), value
