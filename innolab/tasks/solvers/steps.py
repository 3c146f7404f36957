"""Step-function solvers: Erdős minimum overlap and the two autocorrelation inequalities."""

from __future__ import annotations

import time

import numpy as np
from scipy.optimize import minimize

from innolab.tasks.solvers.cli import multistart, parse_args, write

# --------------------------------------------------------------------------------------- objectives


def overlap_terms(h: np.ndarray) -> np.ndarray:
    """(2/n)·Σ_i h_i (1 − h_{i+k}) for every shift k of the full correlation."""
    return np.correlate(h, 1 - h, mode="full") * 2 / len(h)


def overlap_jacobian(h: np.ndarray) -> np.ndarray:
    """Rows: shifts of `overlap_terms`; columns: d/dh."""
    n = len(h)
    jac = np.zeros((2 * n - 1, n))
    for row in range(2 * n - 1):
        k = row - (n - 1)  # np.correlate(a, v)[row] = Σ_i a[i + k] v[i]
        for i in range(max(0, -k), min(n, n - k)):
            jac[row, i + k] += 1 - h[i]
            jac[row, i] -= h[i + k]
    return jac * 2 / n


def autoconvolution_terms(f: np.ndarray) -> np.ndarray:
    """2n·(f∗f)_k for Σf = 1: the first autocorrelation objective is their maximum."""
    return 2 * len(f) * np.convolve(f, f)


def autoconvolution_jacobian(f: np.ndarray) -> np.ndarray:
    n = len(f)
    jac = np.zeros((2 * n - 1, n))
    for k in range(2 * n - 1):
        for i in range(max(0, k - n + 1), min(n, k + 1)):
            jac[k, i] += 2 * f[k - i]
    return jac * 2 * n


def second_ratio(f: np.ndarray) -> float:
    conv = np.convolve(f, f)
    y = np.concatenate(([0.0], conv, [0.0]))
    width = 1.0 / (len(conv) + 1)
    l2 = np.sum(width / 3 * (y[:-1] ** 2 + y[:-1] * y[1:] + y[1:] ** 2))
    return float(l2 / (np.sum(np.abs(conv)) * width * np.max(np.abs(conv))))


# ------------------------------------------------------------------------------------------ methods


def epigraph_slsqp(x0: np.ndarray, terms, jacobian, equality, bounds, max_iter: int = 400) -> np.ndarray:
    """min t s.t. terms(x) ≤ t, equality(x) = 0, bounds: the max of smooth terms as a smooth programme."""
    n = len(x0)
    z0 = np.append(x0, terms(x0).max())
    grad = np.zeros(n + 1)
    grad[-1] = 1.0

    def upper(z: np.ndarray) -> np.ndarray:
        return z[-1] - terms(z[:-1])

    def upper_jac(z: np.ndarray) -> np.ndarray:
        jac = -jacobian(z[:-1])
        return np.column_stack([jac, np.ones(len(jac))])

    res = minimize(lambda z: z[-1], z0, jac=lambda z: grad, method="SLSQP",
                   bounds=[*bounds, (None, None)],
                   constraints=[{"type": "ineq", "fun": upper, "jac": upper_jac},
                                {"type": "eq", "fun": lambda z: equality(z[:-1])}],
                   options={"maxiter": max_iter, "ftol": 1e-13})
    return res.x[:-1]


def smooth_max_descent(x0: np.ndarray, terms, jacobian, project, steps: int, rng: np.random.Generator,
                       beta0: float = 20.0, beta1: float = 2000.0, lr: float = 0.02) -> np.ndarray:
    """Projected gradient descent on a log-sum-exp smoothing of max(terms), with β annealed upwards.

    Unlike the epigraph SLSQP this never sees the max as constraints: it descends a smooth surrogate whose
    sharpness grows, with a small random kick when progress stalls.
    """
    x, best, best_value = project(x0), x0, terms(x0).max()
    for step in range(steps):
        beta = beta0 * (beta1 / beta0) ** (step / max(1, steps - 1))
        t = terms(x)
        w = np.exp(beta * (t - t.max()))
        w /= w.sum()
        grad = w @ jacobian(x)
        x = project(x - lr * grad / (np.linalg.norm(grad) + 1e-12) * (1 - step / steps))
        value = terms(x).max()
        if value < best_value:
            best, best_value = x.copy(), value
        elif step % 200 == 199:
            x = project(best + rng.normal(0, 1e-3, len(x)))
    return best


def project_box_sum(x: np.ndarray, total: float, upper: float = 1.0) -> np.ndarray:
    """Euclidean projection onto {0 ≤ x ≤ upper, Σx = total}, by bisection on the shift."""
    lo, hi = x.min() - upper, x.max()
    for _ in range(100):
        mid = (lo + hi) / 2
        if np.clip(x - mid, 0, upper).sum() > total:
            lo = mid
        else:
            hi = mid
    return np.clip(x - (lo + hi) / 2, 0, upper)


# ------------------------------------------------------------------------ the solve.py entry points


def run_constant_baseline(task_id: str, key: str, n: int, value: float) -> None:
    """Trivial baseline: a constant step function."""
    args = parse_args("constant step function")
    write(args.out, {key: [value] * n}, task_id)


def _erdos_problem(n: int):
    return (overlap_terms, overlap_jacobian, lambda h: h.sum() - n / 2, [(0.0, 1.0)] * n)


def run_erdos(task_id: str, method: str) -> None:
    """Erdős minimum overlap with n steps: epigraph SLSQP or smoothed-max projected descent, multi-start."""
    args = parse_args(f"Erdős minimum overlap, {method}", default_time_limit=60.0)
    rng = np.random.default_rng(args.seed)
    n = 24 if args.quick else 60
    terms, jacobian, equality, bounds = _erdos_problem(n)

    def attempt() -> tuple[np.ndarray, float]:
        h0 = project_box_sum(rng.random(n), n / 2)
        if method == "slsqp":
            h = project_box_sum(epigraph_slsqp(h0, terms, jacobian, equality, bounds), n / 2)
        else:
            h = smooth_max_descent(h0, terms, jacobian, lambda x: project_box_sum(x, n / 2),
                                   400 if args.quick else 3000, rng)
        return h, terms(h).max()

    best = multistart(attempt, args.quick, 1, args.time_limit, minimise=True)
    write(args.out, {"heights": [float(v) for v in best]}, task_id)


def run_first_autocorrelation(task_id: str, method: str) -> None:
    """First autocorrelation: minimise max 2n(f∗f) with Σf = 1, f ≥ 0; epigraph SLSQP or smoothed descent."""
    args = parse_args(f"first autocorrelation, {method}", default_time_limit=60.0)
    rng = np.random.default_rng(args.seed)
    n = 20 if args.quick else 60

    def attempt() -> tuple[np.ndarray, float]:
        f0 = project_box_sum(rng.random(n), 1.0)
        if method == "slsqp":
            f = epigraph_slsqp(f0, autoconvolution_terms, autoconvolution_jacobian, lambda f: f.sum() - 1,
                               [(0.0, 1.0)] * n)
            f = np.maximum(f, 0.0)
        else:
            f = smooth_max_descent(f0, autoconvolution_terms, autoconvolution_jacobian,
                                   lambda x: project_box_sum(x, 1.0), 400 if args.quick else 3000, rng, lr=0.01)
        return f, autoconvolution_terms(f / f.sum()).max()

    best = multistart(attempt, args.quick, 1, args.time_limit, minimise=True)
    write(args.out, {"values": [float(v) for v in best]}, task_id)


def run_second_autocorrelation(task_id: str, method: str) -> None:
    """Second autocorrelation: maximise ‖f∗f‖₂²/(‖f∗f‖₁‖f∗f‖∞); L-BFGS-B on log f, or multiplicative hill-climb."""
    args = parse_args(f"second autocorrelation, {method}", default_time_limit=60.0)
    rng = np.random.default_rng(args.seed)
    n = 30 if args.quick else 80
    deadline = time.monotonic() + (1e9 if args.quick else args.time_limit)
    best, best_value = np.ones(n), second_ratio(np.ones(n))
    while time.monotonic() < deadline:
        if method == "lbfgs":
            w0 = rng.normal(0, 1, n)
            res = minimize(lambda w: -second_ratio(np.exp(w)), w0, method="L-BFGS-B",
                           options={"maxiter": 150 if args.quick else 1000})
            f = np.exp(res.x)
        else:
            f = rng.random(n) + 0.5
            value = second_ratio(f)
            for step in range(3000 if args.quick else 30_000):
                candidate = f * np.exp(rng.normal(0, 0.3 * (1 - step / 30_000) + 0.01, n) * (rng.random(n) < 0.2))
                new = second_ratio(candidate)
                if new > value:
                    f, value = candidate, new
        f = f / f.max()
        if second_ratio(f) > best_value:
            best, best_value = f, second_ratio(f)
        if args.quick:
            break
    write(args.out, {"values": [float(v) for v in best]}, task_id)
