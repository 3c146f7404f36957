"""innolab baseline template (step functions): projected gradient descent with Adam.

On a log-sum-exp smoothing of the max, for erdos_minimum_overlap, first_autocorrelation and
second_autocorrelation; restarts from random steps or from the best so far (perturbed, or with
its resolution doubled).

Reads task.json (the check's name and parameters) in the working folder; writes --out whenever it
finds a better function (so a killed run leaves its best). Runs at most --time seconds.
Usage: python3 steps.py --seed S --time T [--warm BEST.json] --out OUT.json
"""

import time

START = time.time()  # the time limit counts from here, imports included
# ruff: noqa: E402 (the imports come after START, so that their time counts)

import argparse
import json
import os

import numpy as np
from scipy.signal import fftconvolve

CAP = 1 - 1e-9  # heights stay this far below 1 (the overlap check is exact about [0, 1])


def read_args():
    """The command line: seed, time limit, warm-start file and output file."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--time", type=float, required=True)
    parser.add_argument("--warm", default=None)
    parser.add_argument("--out", required=True)
    return parser.parse_args()


def load_json(path):
    """The JSON data of a file."""
    with open(path) as handle:
        return json.load(handle)


def write_json(path, data):
    """Write data to path atomically."""
    with open(path + ".tmp", "w") as handle:
        json.dump(data, handle)
    os.replace(path + ".tmp", path)


def conv(a, b):
    """The full convolution of a and b (FFT beyond a few hundred steps)."""
    return np.convolve(a, b) if len(a) < 300 else fftconvolve(a, b)


def softmax(values, beta):
    """Weights of a log-sum-exp smoothing of max(values) with sharpness beta."""
    w = np.exp(beta * (values - values.max()))
    return w / w.sum()


class Erdos:
    """Minimise (2/n) max_k sum_i h_i (1 - h_{i+k}), h in [0, 1] summing to n/2."""

    key, maximise = "heights", False

    def score(self, h):
        """The check's score, computed as the validator does."""
        n = len(h)
        return float(np.max(np.correlate(h, 1 - h, mode="full")) * 2 / n)

    def project(self, h):
        """The nearest heights in [0, CAP] with sum n/2 (bisection on a shift)."""
        target = len(h) / 2
        lo, hi = -1.0 - h.max(), 1.0 - h.min()
        for _ in range(60):
            mid = (lo + hi) / 2
            if np.clip(h + mid, 0, CAP).sum() > target:
                hi = mid
            else:
                lo = mid
        return np.clip(h + (lo + hi) / 2, 0, CAP)

    def value_grad(self, h, beta):
        """The smoothed objective (minimised) and its gradient."""
        n = len(h)
        c = conv(h, (1 - h)[::-1])  # = correlate(h, 1 - h, "full")
        w = softmax(c, beta)
        # c_k = sum_i h_{i+k-(n-1)} (1 - h_i): d/dh via correlations with the weights
        g = conv(w[::-1], 1 - h)[n - 1:2 * n - 1][::-1] - conv(w, h[::-1])[n - 1:2 * n - 1][::-1]
        return float(w @ c) * 2 / n, g * 2 / n

    def start(self, n, rng):
        """Random admissible steps of length n."""
        return self.project(rng.uniform(0.2, 0.8, n))

    def finish(self, h):
        """The steps as submitted (admissible)."""
        return self.project(h)


class FirstAuto:
    """Minimise 2n max(f*f) / (sum f)^2 over f >= 0."""

    key, maximise = "values", False

    def score(self, f):
        """The check's score, computed as the validator does."""
        return float(2 * len(f) * np.max(np.convolve(f, f)) / np.sum(f) ** 2)

    def project(self, f):
        """The nearest admissible steps."""
        f = np.clip(f, 0, None)
        return f / f.sum() * len(f)

    def value_grad(self, f, beta):
        """The smoothed objective (minimised) and its gradient."""
        n, s = len(f), f.sum()
        c = conv(f, f)
        w = softmax(c, beta)
        soft = float(w @ c)
        grad_c = 2 * conv(w[::-1], f)[n - 1:2 * n - 1][::-1]  # d(w.c)/df
        value = 2 * n * soft / s ** 2
        return value, 2 * n * (grad_c / s ** 2 - 2 * soft / s ** 3)

    def start(self, n, rng):
        """Random admissible steps of length n."""
        return self.project(rng.uniform(0.5, 1.5, n))

    def finish(self, f):
        """The steps as submitted (admissible)."""
        return self.project(f)


class SecondAuto:
    """Maximise ||f*f||_2^2 / (||f*f||_1 ||f*f||_inf) over f >= 0 (piecewise-linear L2)."""

    key, maximise = "values", True

    def score(self, f):
        """The check's score, computed as the validator does."""
        g = np.convolve(f, f)
        m = len(g)
        y = np.concatenate(([0.0], g, [0.0]))
        width = 1.0 / (m + 1)
        l2 = np.sum(width / 3 * (y[:-1] ** 2 + y[:-1] * y[1:] + y[1:] ** 2))
        return float(l2 / (np.sum(np.abs(g)) / (m + 1) * np.max(np.abs(g))))

    def project(self, f):
        """The nearest admissible steps."""
        f = np.clip(f, 0, None)
        return f / max(f.sum(), 1e-300) * len(f)

    def value_grad(self, f, beta):
        """The negated ratio (descent minimises) and its gradient."""
        n = len(f)
        g = conv(f, f)
        m = len(g)
        h = 1.0 / (m + 1)
        y = np.concatenate(([0.0], g, [0.0]))
        l2 = np.sum(h / 3 * (y[:-1] ** 2 + y[:-1] * y[1:] + y[1:] ** 2))
        l2_g = h / 3 * (4 * y[1:-1] + y[:-2] + y[2:])
        l1 = g.sum() * h
        w = softmax(g, beta)
        linf = float(w @ g)
        ratio = l2 / (l1 * linf)
        d_g = ratio * (l2_g / l2 - h / l1 - w / linf)
        grad = 2 * conv(d_g[::-1], f)[n - 1:2 * n - 1][::-1]
        return -ratio, -grad

    def start(self, n, rng):
        """Random admissible steps of length n."""
        return self.project(rng.uniform(0.0, 1.0, n))

    def finish(self, f):
        """The steps as submitted (admissible)."""
        return self.project(f)


PROBLEMS = {"erdos_minimum_overlap": Erdos, "first_autocorrelation": FirstAuto,
            "second_autocorrelation": SecondAuto}


def descend(problem, x, deadline, rng):
    """Adam on the smoothed objective, projected after each step, until the deadline."""
    m, v = np.zeros_like(x), np.zeros_like(x)
    lr = rng.choice([0.003, 0.01, 0.03])
    beta = 50.0
    best, best_score = x.copy(), problem.score(x)
    for t in range(1, 100000):
        if time.time() > deadline:
            break
        _, g = problem.value_grad(x, beta * (len(x) ** 0.5) / max(np.abs(x).mean(), 1e-12))
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        step = lr * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-12)
        x = problem.project(x - step * max(np.abs(x).mean(), 1e-3))
        if t % 20 == 0:
            s = problem.score(x)
            if (s > best_score) if problem.maximise else (s < best_score):
                best, best_score = x.copy(), s
            beta = min(beta * 1.1, 5000.0)
    return best, best_score


def load_warm(path, key, max_n):
    """The steps of a warm-start file, or None."""
    if not path or not os.path.exists(path):
        return None
    try:
        x = np.array(load_json(path)[key], dtype=float)
    except (ValueError, KeyError, TypeError):
        return None
    return x if x.ndim == 1 and 2 <= len(x) <= max_n else None


def main():
    """Descents from random or warm starts until the time limit; the best is written each time."""
    args = read_args()
    start = START
    config = load_json("task.json")
    check = config["check"].partition(":")[2]
    if check not in PROBLEMS:
        raise SystemExit(f"steps template: no search for check {check!r}")
    problem = PROBLEMS[check]()
    max_n = int(config["params"].get("max_n", 100000))
    rng = np.random.default_rng(args.seed)
    best = load_warm(args.warm, problem.key, max_n)
    best_score = problem.score(best) if best is not None else None
    if best is None:  # a first valid function at once: random steps
        best = problem.finish(problem.start(100, rng))
        best_score = problem.score(best)
        write_json(args.out, {problem.key: best.tolist()})
    rounds = 0
    while time.time() - start < args.time * 0.95:
        rounds += 1
        left = args.time * 0.95 - (time.time() - start)
        piece = min(left, max(1.0, args.time / 3))
        if best is None or rng.random() < 0.3:
            x0 = problem.start(int(rng.choice([50, 100, 200, 400])), rng)
        elif rng.random() < 0.3 and 2 * len(best) <= min(max_n, 4000):
            x0 = problem.project(np.repeat(best, 2))  # the same function at twice the resolution
        else:
            x0 = problem.project(best * np.exp(rng.normal(0, rng.choice([0.01, 0.05]),
                                                          len(best))))
        x, s = descend(problem, x0, time.time() + piece, rng)
        x = problem.finish(x)
        s = problem.score(x)
        if np.all(np.isfinite(x)) and x.sum() > 0 and (best_score is None or (
                s > best_score if problem.maximise else s < best_score)):
            best, best_score = x, s
            write_json(args.out, {problem.key: best.tolist()})
            print(f"round {rounds}: n={len(best)} score {best_score:.12g}", flush=True)
    print(f"done: {rounds} rounds, best {best_score}")


if __name__ == "__main__":
    main()
