"""The paper's published numbers (arXiv 2512.01822), shipped as tidy CSV under data/paper/."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from innolab.paths import data_dir

# Each table and the columns it must have; every table also needs a non-empty `source` on every
# row.
SCHEMAS: dict[str, tuple[str, ...]] = {
    "table2": ("task", "framework", "v_star", "gain", "ratio", "novelty", "status", "note"),
    "table2_averages": ("framework", "gain", "ratio", "novelty", "n_valid", "v_star_mean"),
    "table4": ("framework", "metric", "value", "status"),
    "fig6_backbone": ("backbone", "task", "sum_of_radii"),
    "fig6_trends": ("panel", "variable", "quantity", "trend", "detail"),
    "table7": ("task", "metric", "without_prompt", "with_prompt", "change", "note"),
    "appendix_f": ("experiment", "quantity", "value", "scale"),
    "expbench_table1": ("agent", "model", "D", "I", "E", "I_E", "C", "All", "All_E", "n_exec"),
    "ibench_tasks": (
        "name", "domain", "source_competition", "metric", "direction", "v_star",
        "in_main_experiments", "runnable_offline", "offline_note",
    ),
}


class PaperDataError(ValueError):
    """A paper table is unknown or its file breaks the table's schema."""


def names() -> list[str]:
    """List the names `load` accepts.

    Returns:
        The paper tables' names, sorted.
    """
    return sorted(SCHEMAS)


def path(name: str) -> Path:
    """Find the CSV file of one paper table.

    Args:
        name: The table's name (one of `names()`).

    Returns:
        The file's path.

    Raises:
        PaperDataError: The name is unknown.
    """
    if name not in SCHEMAS:
        raise PaperDataError(f"unknown paper table {name!r}; known: {', '.join(names())}")
    return data_dir() / "paper" / f"{name}.csv"


def load(name: str) -> pd.DataFrame:
    """Load one of the paper's tables.

    Args:
        name: The table's name (one of `names()`).

    Returns:
        The table; unknown values are NaN, never filled (text columns read empty as "").

    Raises:
        PaperDataError: The name is unknown, the file lacks a column of its schema, or a row has
            no source.
    """
    file = path(name)
    table = pd.read_csv(file, keep_default_na=True)
    required = (*SCHEMAS[name], "source")
    missing = [c for c in required if c not in table.columns]
    if missing:
        raise PaperDataError(f"{file.name}: missing columns {missing}")
    unsourced = table["source"].isna() | (table["source"].astype(str).str.strip() == "")
    if unsourced.any():
        raise PaperDataError(f"{file.name}: rows {table.index[unsourced].tolist()} have no source")
    for column in ("note", "detail", "offline_note", "domain", "metric", "source_competition"):
        if column in table.columns:
            table[column] = table[column].fillna("")
    return table
