"""Kissing configurations: integer vectors at pairwise distances of at least their largest norm."""

from __future__ import annotations

from typing import Any

import numpy as np

from .core import Invalid, distinct_rows, int_rows, only_keys, violations

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
