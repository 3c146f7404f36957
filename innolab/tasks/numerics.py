"""The numeric kernels a score is computed with, pinned so that one CPU's score is another's.

OpenBLAS picks its kernels by the CPU it finds (DYNAMIC_ARCH): on a CPU with AVX-512 it takes other
kernels than on an AVX2 one, so a sum of the same floats can differ in its last bit and an
optimiser's trajectory drifts (seen: the hidden evaluator gave 1.5261764801997737 on an AVX-512 CPU
for a file recorded at 1.5261764801997735). The hidden evaluator and the known solutions' reruns run
with the kernels the recorded scores were made with: Haswell's (AVX2), on every x86-64 CPU that has
AVX2. Elsewhere OpenBLAS's own choice stands, and the recording says so.
"""

from __future__ import annotations

import os
import platform
from functools import cache

CORETYPE = "Haswell"


@cache
def _has_avx2() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            return any(line.startswith("flags") and " avx2" in line for line in handle)
    except OSError:
        return False


def pinned_coretype() -> str | None:
    """Return the OpenBLAS core type innolab pins on this machine.

    Returns:
        The core type, or None where innolab leaves OpenBLAS's own choice.
    """
    if platform.machine().lower() in ("x86_64", "amd64") and _has_avx2():
        return CORETYPE
    return None


def numeric_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """Return the environment of a child process that computes a score.

    Args:
        base: The environment to start from; None takes this process's.

    Returns:
        A copy of `base` with the pinned OpenBLAS core type set, where one is pinned.
    """
    env = dict(os.environ if base is None else base)
    coretype = pinned_coretype()
    if coretype is not None:
        env["OPENBLAS_CORETYPE"] = coretype
    return env
