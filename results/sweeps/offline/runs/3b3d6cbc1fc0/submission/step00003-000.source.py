# file: baseline_circles.py
"""innolab baseline template (circles): random restarts with SLSQP, radii made strictly feasible.

Reads task.json (the check's name and parameters) in the working folder; writes --out whenever it
finds a better packing (so a killed run leaves its best). Runs at most --time seconds.
Usage: python3 circles.py --seed S --time T [--warm BEST.json] --out OUT.json
"""

import time

START = time.time()  # the time limit counts from here, imports included
# ruff: noqa: E402 (the imports come after START, so that their time counts)

import argparse
import json
import os
import warnings

import numpy as np
from scipy.optimize import minimize

SHRINK = 1e-9  # relative margin on every radius: the checks are exact
ITERATIONS = 120  # SLSQP iterations per restart (more wander more than they gain)
warnings.filterwarnings("ignore")


class TimeUp(Exception):
    """The time limit passed during a local optimisation."""


DEADLINE = [float("inf")]
LAST = [None]  # the last iterate of the local optimisation


def on_iteration(z):
    """SLSQP's callback: keep the iterate; stop at the deadline."""
    LAST[0] = np.array(z)
    if time.time() > DEADLINE[0]:
        raise TimeUp


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


class Container:
    """The square [0, side]^2 (fixed) or a rectangle of width w and height hp - w (w free)."""

    def __init__(self, check, params):
        self.n = int(params["n"])
        self.free = check == "circles_in_rectangle"
        self.hp = float(params.get("half_perimeter", 2.0))

    def size(self, z):
        """Width and height of the container for variables z."""
        if self.free:
            w = z[-1]
            return w, self.hp - w
        return 1.0, 1.0

    def unpack(self, z):
        """Centres and radii from the variables."""
        n = self.n
        return z[:n], z[n : 2 * n], z[2 * n : 3 * n]


def pair_index(n):
    """The index arrays of all pairs i < j."""
    i, j = np.triu_indices(n, 1)
    return i, j


def solve(box, z0, iters):
    """Maximise the sum of radii from z0 with SLSQP; returns the variables reached."""
    n = box.n
    pi, pj = pair_index(n)
    nv = len(z0)

    def objective(z):
        return -np.sum(z[2 * n : 3 * n])

    def objective_grad(z):
        g = np.zeros(nv)
        g[2 * n : 3 * n] = -1.0
        return g

    def pairs(z):
        x, y, r = box.unpack(z)
        dx, dy, sr = x[pi] - x[pj], y[pi] - y[pj], r[pi] + r[pj]
        return dx * dx + dy * dy - sr * sr

    def pairs_jac(z):
        x, y, r = box.unpack(z)
        dx, dy, sr = x[pi] - x[pj], y[pi] - y[pj], r[pi] + r[pj]
        m = len(pi)
        jac = np.zeros((m, nv))
        rows = np.arange(m)
        jac[rows, pi] = 2 * dx
        jac[rows, pj] = -2 * dx
        jac[rows, n + pi] = 2 * dy
        jac[rows, n + pj] = -2 * dy
        jac[rows, 2 * n + pi] = -2 * sr
        jac[rows, 2 * n + pj] = -2 * sr
        return jac

    def walls(z):
        x, y, r = box.unpack(z)
        w, h = box.size(z)
        return np.concatenate([x - r, w - x - r, y - r, h - y - r])

    def walls_jac(z):
        jac = np.zeros((4 * n, nv))
        eye = np.eye(n)
        jac[0:n, 0:n], jac[0:n, 2 * n : 3 * n] = eye, -eye
        jac[n : 2 * n, 0:n], jac[n : 2 * n, 2 * n : 3 * n] = -eye, -eye
        jac[2 * n : 3 * n, n : 2 * n], jac[2 * n : 3 * n, 2 * n : 3 * n] = eye, -eye
        jac[3 * n : 4 * n, n : 2 * n], jac[3 * n : 4 * n, 2 * n : 3 * n] = -eye, -eye
        if box.free:
            jac[n : 2 * n, -1] = 1.0
            jac[3 * n : 4 * n, -1] = -1.0
        return jac

    bounds = [(0.0, box.hp if box.free else 1.0)] * (2 * n) + [(0.0, 0.5 * box.hp)] * n
    if box.free:
        bounds.append((0.05 * box.hp, 0.95 * box.hp))
    constraints = [
        {"type": "ineq", "fun": pairs, "jac": pairs_jac},
        {"type": "ineq", "fun": walls, "jac": walls_jac},
    ]
    result = minimize(
        objective,
        z0,
        jac=objective_grad,
        bounds=bounds,
        constraints=constraints,
        method="SLSQP",
        callback=on_iteration,
        options={"maxiter": iters, "ftol": 1e-12},
    )
    return result.x


def feasible(box, z):
    """Circles [x, y, r] made strictly feasible from z (radii only shrink); None if degenerate."""
    n = box.n
    x, y, r = (a.copy() for a in box.unpack(z))
    w, h = box.size(z)
    r = np.clip(r, 0.0, None)
    r = np.minimum.reduce([r, x, w - x, y, h - y])
    r = np.clip(r, 0.0, None)
    for _ in range(3):
        for i in range(n):
            for j in range(i + 1, n):
                d = np.hypot(x[i] - x[j], y[i] - y[j])
                if r[i] + r[j] > d:
                    scale = d / (r[i] + r[j])
                    r[i] *= scale
                    r[j] *= scale
    r = r * (1 - SHRINK) - 1e-15
    r = np.clip(r, 0.0, None)
    if len({(a, b) for a, b in zip(x.tolist(), y.tolist(), strict=True)}) < n:
        return None
    return np.stack([x, y, r], axis=1)


def score(circles):
    """The sum of the radii."""
    return float(np.sum(circles[:, 2]))


def fresh_start(box, rng):
    """Random centres, small random radii, a random width for a free rectangle."""
    n = box.n
    w = rng.uniform(0.3, 0.7) * box.hp if box.free else 1.0
    h = box.hp - w if box.free else 1.0
    z = np.concatenate(
        [
            rng.uniform(0, w, n),
            rng.uniform(0, h, n),
            rng.uniform(0.0, 0.5 / np.sqrt(n), n) * min(w, h),
        ]
    )
    return np.append(z, w) if box.free else z


def warm_start(box, best, rng, polish=False):
    """The best packing perturbed: jitter, and a few circles moved to random places.

    A polish only jitters it a little (the local optimum is refined further).
    """
    n = box.n
    x, y, r = best[:, 0].copy(), best[:, 1].copy(), best[:, 2].copy()
    if box.free:  # translate to the origin; the width is the bounding box's
        x0, y0 = np.min(x - r), np.min(y - r)
        x, y = x - x0, y - y0
        w = float(np.max(x + r))
    else:
        w = 1.0
    h = box.hp - w if box.free else 1.0
    scale = 1e-5 if polish else rng.choice([0.001, 0.003, 0.01])
    x = x + rng.normal(0, scale, n)
    y = y + rng.normal(0, scale, n)
    count = int(rng.integers(1, 3))  # the smallest circles, or random ones, moved
    moved = np.argsort(r)[:count] if rng.random() < 0.5 else rng.choice(n, count, replace=False)
    moved = [] if polish else moved
    x[moved], y[moved], r[moved] = rng.uniform(0, w, len(moved)), rng.uniform(0, h, len(moved)), 0.0
    z = np.concatenate([np.clip(x, 0, w), np.clip(y, 0, h), r * (1.0 if polish else 0.95)])
    return np.append(z, w) if box.free else z


def load_warm(path, n):
    """The circles of a warm-start file, or None."""
    if not path or not os.path.exists(path):
        return None
    try:
        circles = np.array(load_json(path)["circles"], dtype=float)
    except (ValueError, KeyError, TypeError):
        return None
    return circles if circles.shape == (n, 3) else None


def main():
    """Restarts until the time limit; the best packing is written after each improvement."""
    args = read_args()
    start = START
    config = load_json("task.json")
    box = Container(config["check"].partition(":")[2], config["params"])
    DEADLINE[0] = start + args.time
    rng = np.random.default_rng(args.seed)
    best = load_warm(args.warm, box.n)
    best_score = score(best) if best is not None else -1.0
    if best is None:  # a first valid packing at once: random centres, radii made feasible
        best = feasible(box, fresh_start(box, rng))
        if best is not None:
            best_score = score(best)
            write_json(args.out, {"circles": best.tolist()})
    restarts, longest = 0, 0.0
    while best is None or time.time() - start + longest < args.time:
        restarts += 1
        began = time.time()
        use_warm = best is not None and rng.random() < 0.7
        if best is not None and restarts == 1 and args.warm:  # first, polish the best so far
            z0 = warm_start(box, best, rng, polish=True)
        elif use_warm:
            z0 = warm_start(box, best, rng)
        else:
            z0 = fresh_start(box, rng)
        try:
            circles = feasible(box, solve(box, z0, ITERATIONS))
        except TimeUp:  # the last iterate, made feasible, is a candidate too
            circles = feasible(box, LAST[0]) if LAST[0] is not None else None
            if circles is not None and score(circles) > best_score:
                best, best_score = circles, score(circles)
                write_json(args.out, {"circles": best.tolist()})
            break
        if circles is not None and score(circles) > best_score:
            best, best_score = circles, score(circles)
            write_json(args.out, {"circles": best.tolist()})
            print(f"restart {restarts}: sum of radii {best_score:.10f}", flush=True)
        longest = max(longest, time.time() - began)
    print(f"done: {restarts} restarts, best {best_score:.10f}")


if __name__ == "__main__":
    main()

# file: program.py
"""innolab baseline template (circles): random restarts with SLSQP, radii made strictly feasible.

Reads task.json (the check's name and parameters) in the working folder; writes --out whenever it
finds a better packing (so a killed run leaves its best). Runs at most --time seconds.
Usage: python3 circles.py --seed S --time T [--warm BEST.json] --out OUT.json
"""

import time

START = time.time()  # the time limit counts from here, imports included
# ruff: noqa: E402 (the imports come after START, so that their time counts)

import argparse
import json
import os
import warnings

import numpy as np
from scipy.optimize import minimize

SHRINK = 1e-9  # relative margin on every radius: the checks are exact
ITERATIONS = 120  # SLSQP iterations per restart (more wander more than they gain)
warnings.filterwarnings("ignore")


class TimeUp(Exception):
    """The time limit passed during a local optimisation."""


DEADLINE = [float("inf")]
LAST = [None]  # the last iterate of the local optimisation


def on_iteration(z):
    """SLSQP's callback: keep the iterate; stop at the deadline."""
    LAST[0] = np.array(z)
    if time.time() > DEADLINE[0]:
        raise TimeUp


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


class Container:
    """The square [0, side]^2 (fixed) or a rectangle of width w and height hp - w (w free)."""

    def __init__(self, check, params):
        self.n = int(params["n"])
        self.free = check == "circles_in_rectangle"
        self.hp = float(params.get("half_perimeter", 2.0))

    def size(self, z):
        """Width and height of the container for variables z."""
        if self.free:
            w = z[-1]
            return w, self.hp - w
        return 1.0, 1.0

    def unpack(self, z):
        """Centres and radii from the variables."""
        n = self.n
        return z[:n], z[n : 2 * n], z[2 * n : 3 * n]


def pair_index(n):
    """The index arrays of all pairs i < j."""
    i, j = np.triu_indices(n, 1)
    return i, j


def solve(box, z0, iters):
    """Maximise the sum of radii from z0 with SLSQP; returns the variables reached."""
    n = box.n
    pi, pj = pair_index(n)
    nv = len(z0)

    def objective(z):
        return -np.sum(z[2 * n : 3 * n])

    def objective_grad(z):
        g = np.zeros(nv)
        g[2 * n : 3 * n] = -1.0
        return g

    def pairs(z):
        x, y, r = box.unpack(z)
        dx, dy, sr = x[pi] - x[pj], y[pi] - y[pj], r[pi] + r[pj]
        return dx * dx + dy * dy - sr * sr

    def pairs_jac(z):
        x, y, r = box.unpack(z)
        dx, dy, sr = x[pi] - x[pj], y[pi] - y[pj], r[pi] + r[pj]
        m = len(pi)
        jac = np.zeros((m, nv))
        rows = np.arange(m)
        jac[rows, pi] = 2 * dx
        jac[rows, pj] = -2 * dx
        jac[rows, n + pi] = 2 * dy
        jac[rows, n + pj] = -2 * dy
        jac[rows, 2 * n + pi] = -2 * sr
        jac[rows, 2 * n + pj] = -2 * sr
        return jac

    def walls(z):
        x, y, r = box.unpack(z)
        w, h = box.size(z)
        return np.concatenate([x - r, w - x - r, y - r, h - y - r])

    def walls_jac(z):
        jac = np.zeros((4 * n, nv))
        eye = np.eye(n)
        jac[0:n, 0:n], jac[0:n, 2 * n : 3 * n] = eye, -eye
        jac[n : 2 * n, 0:n], jac[n : 2 * n, 2 * n : 3 * n] = -eye, -eye
        jac[2 * n : 3 * n, n : 2 * n], jac[2 * n : 3 * n, 2 * n : 3 * n] = eye, -eye
        jac[3 * n : 4 * n, n : 2 * n], jac[3 * n : 4 * n, 2 * n : 3 * n] = -eye, -eye
        if box.free:
            jac[n : 2 * n, -1] = 1.0
            jac[3 * n : 4 * n, -1] = -1.0
        return jac

    bounds = [(0.0, box.hp if box.free else 1.0)] * (2 * n) + [(0.0, 0.5 * box.hp)] * n
    if box.free:
        bounds.append((0.05 * box.hp, 0.95 * box.hp))
    constraints = [
        {"type": "ineq", "fun": pairs, "jac": pairs_jac},
        {"type": "ineq", "fun": walls, "jac": walls_jac},
    ]
    result = minimize(
        objective,
        z0,
        jac=objective_grad,
        bounds=bounds,
        constraints=constraints,
        method="SLSQP",
        callback=on_iteration,
        options={"maxiter": iters, "ftol": 1e-12},
    )
    return result.x


def feasible(box, z):
    """Circles [x, y, r] made strictly feasible from z (radii only shrink); None if degenerate."""
    n = box.n
    x, y, r = (a.copy() for a in box.unpack(z))
    w, h = box.size(z)
    r = np.clip(r, 0.0, None)
    r = np.minimum.reduce([r, x, w - x, y, h - y])
    r = np.clip(r, 0.0, None)
    for _ in range(3):
        for i in range(n):
            for j in range(i + 1, n):
                d = np.hypot(x[i] - x[j], y[i] - y[j])
                if r[i] + r[j] > d:
                    scale = d / (r[i] + r[j])
                    r[i] *= scale
                    r[j] *= scale
    r = r * (1 - SHRINK) - 1e-15
    r = np.clip(r, 0.0, None)
    if len({(a, b) for a, b in zip(x.tolist(), y.tolist(), strict=True)}) < n:
        return None
    return np.stack([x, y, r], axis=1)


def score(circles):
    """The sum of the radii."""
    return float(np.sum(circles[:, 2]))


def fresh_start(box, rng):
    """Random centres, small random radii, a random width for a free rectangle."""
    n = box.n
    w = rng.uniform(0.3, 0.7) * box.hp if box.free else 1.0
    h = box.hp - w if box.free else 1.0
    z = np.concatenate(
        [
            rng.uniform(0, w, n),
            rng.uniform(0, h, n),
            rng.uniform(0.0, 0.5 / np.sqrt(n), n) * min(w, h),
        ]
    )
    return np.append(z, w) if box.free else z


def warm_start(box, best, rng, polish=False):
    """The best packing perturbed: jitter, and a few circles moved to random places.

    A polish only jitters it a little (the local optimum is refined further).
    """
    n = box.n
    x, y, r = best[:, 0].copy(), best[:, 1].copy(), best[:, 2].copy()
    if box.free:  # translate to the origin; the width is the bounding box's
        x0, y0 = np.min(x - r), np.min(y - r)
        x, y = x - x0, y - y0
        w = float(np.max(x + r))
    else:
        w = 1.0
    h = box.hp - w if box.free else 1.0
    scale = 1e-5 if polish else rng.choice([0.001, 0.003, 0.01])
    x = x + rng.normal(0, scale, n)
    y = y + rng.normal(0, scale, n)
    count = int(rng.integers(1, 3))  # the smallest circles, or random ones, moved
    moved = np.argsort(r)[:count] if rng.random() < 0.5 else rng.choice(n, count, replace=False)
    moved = [] if polish else moved
    x[moved], y[moved], r[moved] = rng.uniform(0, w, len(moved)), rng.uniform(0, h, len(moved)), 0.0
    z = np.concatenate([np.clip(x, 0, w), np.clip(y, 0, h), r * (1.0 if polish else 0.95)])
    return np.append(z, w) if box.free else z


def load_warm(path, n):
    """The circles of a warm-start file, or None."""
    if not path or not os.path.exists(path):
        return None
    try:
        circles = np.array(load_json(path)["circles"], dtype=float)
    except (ValueError, KeyError, TypeError):
        return None
    return circles if circles.shape == (n, 3) else None


def main():
    """Restarts until the time limit; the best packing is written after each improvement."""
    args = read_args()
    start = START
    config = load_json("task.json")
    box = Container(config["check"].partition(":")[2], config["params"])
    DEADLINE[0] = start + args.time
    rng = np.random.default_rng(args.seed)
    best = load_warm(args.warm, box.n)
    best_score = score(best) if best is not None else -1.0
    if best is None:  # a first valid packing at once: random centres, radii made feasible
        best = feasible(box, fresh_start(box, rng))
        if best is not None:
            best_score = score(best)
            write_json(args.out, {"circles": best.tolist()})
    restarts, longest = 0, 0.0
    while best is None or time.time() - start + longest < args.time:
        restarts += 1
        began = time.time()
        use_warm = best is not None and rng.random() < 0.7
        if best is not None and restarts == 1 and args.warm:  # first, polish the best so far
            z0 = warm_start(box, best, rng, polish=True)
        elif use_warm:
            z0 = warm_start(box, best, rng)
        else:
            z0 = fresh_start(box, rng)
        try:
            circles = feasible(box, solve(box, z0, ITERATIONS))
        except TimeUp:  # the last iterate, made feasible, is a candidate too
            circles = feasible(box, LAST[0]) if LAST[0] is not None else None
            if circles is not None and score(circles) > best_score:
                best, best_score = circles, score(circles)
                write_json(args.out, {"circles": best.tolist()})
            break
        if circles is not None and score(circles) > best_score:
            best, best_score = circles, score(circles)
            write_json(args.out, {"circles": best.tolist()})
            print(f"restart {restarts}: sum of radii {best_score:.10f}", flush=True)
        longest = max(longest, time.time() - began)
    print(f"done: {restarts} restarts, best {best_score:.10f}")


if __name__ == "__main__":
    main()
# ran as: python3 baseline_circles.py --seed 617686959 --time 7.5 --out candidate-0.json
