"""innolab baseline template (points): random restarts, each a local optimisation (SLSQP).

The minimum (or maximum) is written with a slack variable, for the point-placement checks:
heilbronn_triangle, heilbronn_convex and min_max_distance_ratio.

Reads task.json (the check's name and parameters) in the working folder; writes --out whenever it
finds a better configuration (so a killed run leaves its best). Runs at most --time seconds.
Usage: python3 points.py --seed S --time T [--warm BEST.json] --out OUT.json
"""

import time

START = time.time()  # the time limit counts from here, imports included
# ruff: noqa: E402 (the imports come after START, so that their time counts)

import argparse
import itertools
import json
import os
import warnings

import numpy as np
from scipy.optimize import minimize
from scipy.spatial import ConvexHull

warnings.filterwarnings("ignore")
SQRT3 = np.sqrt(3.0)
CENTROID = np.array([0.5, SQRT3 / 6])


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


def areas2(p, triples):
    """Signed doubled areas of the triples of points p."""
    a, b, c = p[triples[:, 0]], p[triples[:, 1]], p[triples[:, 2]]
    return (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])


def areas2_jac(p, triples, signs):
    """The Jacobian of signs * doubled areas with respect to the flattened points."""
    n = len(p)
    a, b, c = p[triples[:, 0]], p[triples[:, 1]], p[triples[:, 2]]
    m = len(triples)
    jac = np.zeros((m, 2 * n))
    rows = np.arange(m)
    # d/da, d/db, d/dc of (b-a)x(c-a)
    grads = {
        0: (b[:, 1] - c[:, 1], c[:, 0] - b[:, 0]),
        1: (c[:, 1] - a[:, 1], a[:, 0] - c[:, 0]),
        2: (a[:, 1] - b[:, 1], b[:, 0] - a[:, 0]),
    }
    for k, (gx, gy) in grads.items():
        np.add.at(jac, (rows, 2 * triples[:, k]), signs * gx)
        np.add.at(jac, (rows, 2 * triples[:, k] + 1), signs * gy)
    return jac


class Problem:
    """One of the point checks: its score, a random start and a local optimisation."""

    def __init__(self, check, params):
        self.check = check
        self.n = int(params["n"])
        if check not in ("heilbronn_triangle", "heilbronn_convex", "min_max_distance_ratio"):
            raise SystemExit(f"points template: no search for check {check!r}")
        self.maximise = check != "min_max_distance_ratio"
        self.triples = np.array(list(itertools.combinations(range(self.n), 3)))
        self.pairs = np.array(list(itertools.combinations(range(self.n), 2)))

    def score(self, p):
        """The check's score in floating point (the validator's is exact)."""
        if self.check == "min_max_distance_ratio":
            d2 = np.sum((p[self.pairs[:, 0]] - p[self.pairs[:, 1]]) ** 2, axis=1)
            return float(d2.max() / d2.min()) if d2.min() > 0 else float("inf")
        smallest = float(np.min(np.abs(areas2(p, self.triples)))) / 2
        if self.check == "heilbronn_triangle":
            return smallest / (SQRT3 / 4)
        try:
            return smallest / ConvexHull(p).volume
        except Exception:
            return 0.0

    def better(self, a, b):
        """Whether score a beats score b."""
        return a > b if self.maximise else a < b

    def random_start(self, rng):
        """Random points in the triangle (or the unit square)."""
        if self.check == "heilbronn_triangle":
            u, v = rng.random(self.n), rng.random(self.n)
            flip = u + v > 1
            u[flip], v[flip] = 1 - u[flip], 1 - v[flip]
            return np.stack([u + 0.5 * v, SQRT3 / 2 * v], axis=1)
        return rng.random((self.n, 2))

    def perturb(self, p, rng, polish=False):
        """A copy of p jittered, with one or two points moved at random (a polish: jitter only)."""
        q = p.copy()
        spread = float(np.ptp(q, axis=0).max())
        q += rng.normal(0, (1e-6 if polish else rng.choice([0.002, 0.01, 0.03])) * spread, q.shape)
        if polish:
            return self.inside(q) if self.check == "heilbronn_triangle" else q
        moved = rng.choice(self.n, size=rng.integers(1, 3), replace=False)
        fresh = self.random_start(rng)
        if self.check != "heilbronn_triangle":
            fresh = q.min(axis=0) + fresh * np.ptp(q, axis=0)
        q[moved] = fresh[moved]
        return self.inside(q) if self.check == "heilbronn_triangle" else q

    def inside(self, p):
        """Points pulled strictly inside the triangle towards its centroid."""
        q = p.copy()
        for _ in range(3):
            x, y = q[:, 0], q[:, 1]
            out = (y < 0) | (y > SQRT3 * x) | (y > SQRT3 * (1 - x))
            if not out.any():
                break
            q[out] = CENTROID + (q[out] - CENTROID) * 0.98
            q[:, 1] = np.maximum(q[:, 1], 0)
        return CENTROID + (q - CENTROID) * (1 - 1e-9)

    def finish(self, p):
        """Points as submitted: inside the triangle where the check has one."""
        return self.inside(p) if self.check == "heilbronn_triangle" else p

    def optimise(self, p0):
        """A local optimum from p0: maximise (minimise) a slack t under smooth constraints."""
        n = self.n
        if self.check == "min_max_distance_ratio":
            return self._ratio(p0)
        signs = np.sign(areas2(p0, self.triples))
        signs[signs == 0] = 1.0
        t0 = float(np.min(signs * areas2(p0, self.triples)))
        constraints = [
            {
                "type": "ineq",
                "fun": lambda z: signs * areas2(z[:-1].reshape(n, 2), self.triples) - z[-1],
                "jac": lambda z: np.hstack(
                    [
                        areas2_jac(z[:-1].reshape(n, 2), self.triples, signs),
                        -np.ones((len(self.triples), 1)),
                    ]
                ),
            }
        ]
        if self.check == "heilbronn_triangle":
            a = np.zeros((3 * n, 2 * n + 1))
            b = np.zeros(3 * n)
            for i in range(n):  # y >= 0, sqrt3 x - y >= 0, sqrt3 (1 - x) - y >= 0
                a[i, 2 * i + 1] = 1
                a[n + i, 2 * i], a[n + i, 2 * i + 1] = SQRT3, -1
                a[2 * n + i, 2 * i], a[2 * n + i, 2 * i + 1] = -SQRT3, -1
                b[2 * n + i] = SQRT3
            constraints.append({"type": "ineq", "fun": lambda z: a @ z + b, "jac": lambda z: a})
        else:  # the hull's area (its current vertices, in order) held at most its start value
            hull = ConvexHull(p0).vertices
            area0 = ConvexHull(p0).volume

            def hull_area(z):
                q = z[:-1].reshape(n, 2)[hull]
                return 0.5 * np.sum(q[:, 0] * np.roll(q[:, 1], -1) - np.roll(q[:, 0], -1) * q[:, 1])

            def hull_jac(z):
                q = z[:-1].reshape(n, 2)[hull]
                jac = np.zeros(2 * n + 1)
                jac[2 * hull] = 0.5 * (np.roll(q[:, 1], -1) - np.roll(q[:, 1], 1))
                jac[2 * hull + 1] = 0.5 * (np.roll(q[:, 0], 1) - np.roll(q[:, 0], -1))
                return -jac

            constraints.append(
                {"type": "ineq", "fun": lambda z: area0 - hull_area(z), "jac": hull_jac}
            )
        z0 = np.append(p0.ravel(), t0)
        gradient = np.zeros(2 * n + 1)
        gradient[-1] = -1.0
        result = minimize(
            lambda z: -z[-1],
            z0,
            jac=lambda z: gradient,
            method="SLSQP",
            callback=on_iteration,
            constraints=constraints,
            options={"maxiter": 200, "ftol": 1e-14},
        )
        return self.finish(result.x[:-1].reshape(n, 2))

    def _ratio(self, p0):
        """Minimise s subject to 1 <= d_ij^2 <= s (the squared distances)."""
        n, pairs = self.n, self.pairs
        m = len(pairs)
        d2 = np.sum((p0[pairs[:, 0]] - p0[pairs[:, 1]]) ** 2, axis=1)
        p0 = p0 / np.sqrt(d2.min())
        rows = np.arange(m)

        def dist2(z):
            q = z[:-1].reshape(n, 2)
            return np.sum((q[pairs[:, 0]] - q[pairs[:, 1]]) ** 2, axis=1)

        def dist2_jac(z):
            q = z[:-1].reshape(n, 2)
            diff = q[pairs[:, 0]] - q[pairs[:, 1]]
            jac = np.zeros((m, 2 * n + 1))
            for axis in range(2):
                jac[rows, 2 * pairs[:, 0] + axis] = 2 * diff[:, axis]
                jac[rows, 2 * pairs[:, 1] + axis] = -2 * diff[:, axis]
            return jac

        def upper_jac(z):
            jac = -dist2_jac(z)
            jac[:, -1] = 1.0
            return jac

        z0 = np.append(p0.ravel(), dist2(np.append(p0.ravel(), 0)).max())
        gradient = np.zeros(2 * n + 1)
        gradient[-1] = 1.0
        constraints = [
            {"type": "ineq", "fun": lambda z: dist2(z) - 1.0, "jac": dist2_jac},
            {"type": "ineq", "fun": lambda z: z[-1] - dist2(z), "jac": upper_jac},
        ]
        result = minimize(
            lambda z: z[-1],
            z0,
            jac=lambda z: gradient,
            method="SLSQP",
            callback=on_iteration,
            constraints=constraints,
            options={"maxiter": 200, "ftol": 1e-14},
        )
        return result.x[:-1].reshape(n, 2)


def load_warm(path, n):
    """The points of a warm-start file, or None."""
    if not path or not os.path.exists(path):
        return None
    try:
        points = np.array(load_json(path)["points"], dtype=float)
    except (ValueError, KeyError, TypeError):
        return None
    return points if points.shape == (n, 2) else None


def main():
    """Restarts until the time limit; the best configuration is written after each improvement."""
    args = read_args()
    start = START
    config = load_json("task.json")
    problem = Problem(config["check"].partition(":")[2], config["params"])
    DEADLINE[0] = start + args.time
    rng = np.random.default_rng(args.seed)
    best = load_warm(args.warm, problem.n)
    best_score = problem.score(best) if best is not None else None
    if best is None:  # a first valid configuration at once: random points
        best = problem.random_start(rng)
        best_score = problem.score(best)
        write_json(args.out, {"points": best.tolist()})
    restarts, longest = 0, 0.0
    while best is None or time.time() - start + longest < args.time:
        restarts += 1
        began = time.time()
        use_warm = best is not None and rng.random() < 0.6
        if restarts == 1 and args.warm and best is not None:  # first, polish the best so far
            p0 = problem.perturb(best, rng, polish=True)
        elif use_warm:
            p0 = problem.perturb(best, rng)
        else:
            p0 = problem.random_start(rng)
        timed_out = False
        try:
            p = problem.optimise(p0)
        except TimeUp:  # the last iterate is a candidate too
            timed_out = True
            p = problem.finish(LAST[0][:-1].reshape(problem.n, 2))
        except (ValueError, np.linalg.LinAlgError):
            p = p0
        s = problem.score(p)
        unique = len({tuple(row) for row in p.tolist()}) == problem.n
        if (
            np.all(np.isfinite(p))
            and unique
            and np.isfinite(s)
            and (best_score is None or problem.better(s, best_score))
        ):
            best, best_score = p, s
            write_json(args.out, {"points": best.tolist()})
            print(f"restart {restarts}: score {best_score:.12g}", flush=True)
        if timed_out:
            break
        longest = max(longest, time.time() - began)
    print(f"done: {restarts} restarts, best {best_score}")


if __name__ == "__main__":
    main()
