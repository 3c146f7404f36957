"""Kissing configurations: integer vectors at pairwise distances of at least their largest norm."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from .core import (
    Invalid,
    Outcome,
    distinct_rows,
    hostile_variants,
    int_rows,
    only_keys,
    violations,
)

# entries below 2^28: eleven squared differences fit int64 with room to spare
FAST_PATH_BITS = 28


def kissing_configuration(
    data: dict[str, Any], dim: int, max_vectors: int = 5000, max_bits: int = 63
) -> float:
    """Check integer vectors C ⊂ ℤ^dim, 0 ∉ C, min ‖x − y‖² ≥ max ‖x‖²; score |C| (maximise).

    Exact Python integers throughout; entries may have up to `max_bits` bits (published
    constructions use entries near 10^13), and int64 is used only where no sum can overflow it.

    Args:
        data: The submission: {"vectors": [[int, ...], ...]}.
        dim: The dimension.
        max_vectors: The most vectors.
        max_bits: The largest bit length of an entry.

    Returns:
        The number of vectors.

    Raises:
        Invalid: The submission breaks a rule (every violation listed).
    """
    only_keys(data, ("vectors",))
    rows = int_rows(data, "vectors", None, dim, max_bits)
    if not 1 <= len(rows) <= max_vectors:
        raise Invalid(f"vectors must hold between 1 and {max_vectors} rows, got {len(rows)}")
    small = all(abs(x) < 2**FAST_PATH_BITS for row in rows for x in row)
    v = np.array(rows, dtype=np.int64 if small else object).reshape(len(rows), dim)
    norms = (v * v).sum(axis=1)
    zero = [f"vectors[{i}] is the zero vector" for i in np.flatnonzero(norms == 0)]
    violations("non-zero", zero)
    distinct_rows(rows, "vectors")
    longest = int(norms.max())
    close = []
    for i in range(len(v) - 1):
        d2 = ((v[i + 1 :] - v[i]) ** 2).sum(axis=1)
        for k in np.flatnonzero(d2 < longest):
            close.append(f"vectors[{i}] and vectors[{i + 1 + int(k)}]: squared distance "
                         f"{int(d2[k])} < max "
                         f"squared norm {longest} (short by {longest - int(d2[k])})")
    violations("separation", close)
    return float(len(v))


# ---------------------------------------------------------------------------- outcome descriptors

KISSING_SCALE = (
    "kissing: the distribution of the normalised inner products ⟨x, y⟩ / max ‖z‖² over all "
    "pairs of vectors (invariant under every rotation and reflection, scaling and relabelling; "
    "for a valid configuration each lies in [−1, 1/2], since ‖x − y‖² ≥ max ‖z‖²), binned to "
    "1/2048 (bins centred on multiples of 1/2048, so 0, ±1/2 and −1 are bin centres); the "
    "distance is 100 × the 1-Wasserstein distance of the two distributions over 1.5, that "
    "interval's length: 0 the same distribution, 100 all mass moved across the whole interval"
)
INNER_PRODUCT_RANGE = 1.5
BIN = 1 / 2048
LOWEST = -2048  # the bin of −1; the last is that of 1/2 (values outside fall in the end bins)
BINS = 2048 + 1024 + 1
ROWS_AT_ONCE = 256


def _describe_vectors(data: dict[str, Any], params: dict[str, Any]) -> np.ndarray:
    only_keys(data, ("vectors",))
    rows = int_rows(data, "vectors", None, params.get("dim", 11), params.get("max_bits", 63))
    if len(rows) < 2:
        raise Invalid("vectors: an outcome needs at least 2 vectors (it compares their pairs)")
    v = np.array([[float(x) for x in row] for row in rows])
    v /= max(float(np.abs(v).max()), 1.0)  # no overflow below; the inner products are ratios
    longest = float((v * v).sum(axis=1).max())
    if not longest > 0:
        raise Invalid("vectors: every vector is zero")
    counts = np.zeros(BINS, dtype=np.int64)
    columns = np.arange(len(v))
    for first in range(0, len(v) - 1, ROWS_AT_ONCE):
        block = v[first:first + ROWS_AT_ONCE] @ v.T / longest
        pairs = block[columns[None, :] > columns[first:first + len(block), None]]  # j > i
        index = np.clip(np.rint(pairs / BIN).astype(np.int64) - LOWEST, 0, BINS - 1)
        counts += np.bincount(index, minlength=BINS)
    return counts / counts.sum()


def _kissing_distance(a: np.ndarray, b: np.ndarray) -> float:
    w1 = BIN * float(np.abs(np.cumsum(a) - np.cumsum(b)).sum())
    return float(min(100.0, 100 * w1 / INNER_PRODUCT_RANGE))


OUTCOMES = {
    "kissing_configuration": Outcome(_describe_vectors, _kissing_distance, KISSING_SCALE),
}


# ------------------------------------------------------------------------------- hostile inputs

CHECKS = ("kissing_configuration",)


def _hostile(params: dict[str, Any]) -> dict[str, str]:
    dim = int(params["dim"])
    rows = [[2 if j == i % dim else 0 for j in range(dim)] for i in range(dim)]
    out = hostile_variants("vectors", rows, fixed_rows=False)
    out["a float entry"] = json.dumps({"vectors": [[2.0] + [0] * (dim - 1)]})
    out["a vector of the wrong length"] = json.dumps({"vectors": [[2] * (dim + 1)]})
    out["the zero vector"] = json.dumps({"vectors": [[0] * dim]})
    out["a repeated vector"] = json.dumps({"vectors": [rows[0], rows[0]]})
    return out


HOSTILE = {"kissing_configuration": _hostile}
