"""A benchmark's committed output: results/bench/<name>.json, its figures with where they were made.

Each file holds the benchmark's name, its figures (what its `main` returned), the settings it ran
with, the commit (and whether the tree had changes), the date, the wall time and the machine
(cores, load average at the start and the end, memory, Python, platform, Docker engine). README
cites a figure as a link into the file,
`[7.0 ms](results/bench/bench_gym.json#local_tool_call_ms)`: the fragment is the figure's key path
(dots between keys and list indices), and tests/test_readme_figures.py checks that the text shows
the value the file holds.
"""

from __future__ import annotations

import datetime
import json
import math
import numbers
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BENCH_DIR = ROOT / "results" / "bench"


def machine() -> dict[str, Any]:
    """This machine as a benchmark records it: cores, memory, Python, platform, Docker."""
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        memory_gb: float | None = round(pages * size / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        memory_gb = None
    return {"cores": os.cpu_count(), "memory_gb": memory_gb,
            "python": platform.python_version(), "platform": platform.platform(terse=True),
            "machine": platform.machine(), "docker": docker_version()}


def docker_version() -> str | None:
    """The Docker engine's version, or None where no engine answers."""
    try:
        done = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"],
                              capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def load() -> list[float]:
    """The 1, 5 and 15-minute load averages."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def commit() -> dict[str, Any]:
    """The checkout's commit and whether its tracked files had changes.

    The benchmarks' own outputs (results/bench/) do not count: `make bench` writes one after
    another, and the code each measures is the commit's all the same.
    """
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    return {"commit": git("rev-parse", "HEAD") or None,
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no", "--", ".",
                              f":(exclude){BENCH_DIR.relative_to(ROOT).as_posix()}"))}


def plain(value: Any) -> Any:
    """A benchmark's figures as JSON data (numpy scalars as numbers, NaN as None, paths as text)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        return None if math.isnan(number) or math.isinf(number) else number
    return str(value)


def write(name: str, figures: Any, folder: Path, *, settings: dict[str, Any],
          started: datetime.datetime, wall_s: float, load_start: list[float]) -> Path:
    """Write one benchmark's output file.

    Args:
        name: The benchmark (its module's name).
        figures: What its `main` returned.
        folder: Where the file goes.
        settings: The keyword arguments it ran with (empty: its defaults).
        started: When it started (UTC).
        wall_s: Its wall time in seconds.
        load_start: The load averages when it started.

    Returns:
        The file written.
    """
    folder.mkdir(parents=True, exist_ok=True)
    record = {"benchmark": name, "figures": plain(figures), "settings": plain(settings),
              **commit(), "date": started.isoformat(timespec="seconds"),
              "wall_s": round(wall_s, 1),
              "machine": {**machine(), "load_start": load_start, "load_end": load()},
              "argv": sys.argv[1:]}
    path = folder / f"{name}.json"
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return path


def figure(record: dict[str, Any], key: str) -> Any:
    """A figure of a benchmark's output by its key path (`a.b.0.c`).

    Args:
        record: The file's data.
        key: Keys and list indices, dot-separated, under "figures" (or the record's own keys,
            e.g. `wall_s`, prefixed with `:`).

    Returns:
        The value.

    Raises:
        KeyError: No such figure.
    """
    value: Any = record if key.startswith(":") else record["figures"]
    for part in key.lstrip(":").split("."):
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value
