"""A task's frontier over time, from its dated ledger as a DataFrame: pure functions and a chart.

The ledger comes in as a DataFrame, one row per entry, with at least the columns `value`, `date`,
`status` ("verified", "reported", "refuted"), `kind` ("record", "lower_bound", "upper_bound"),
`holder` and `source` (a notebook builds it from `Task.ledger`; analysis never imports the tasks).
A date may be a `datetime.date`, a timestamp or text as published (`YYYY-MM-DD`, `YYYY-MM`,
`YYYY`); a month or a year alone stands for its first day, the ledger's own rule
(innolab.tasks.frontier), so the record as of a date here is V* as of that date there.

The record as of a date is the best non-refuted record dated on or before it (`metrics.better`:
among equal values the earliest entry holds it, a copied record ties, it does not win). A proven
bound's tightest value is the lowest upper bound or the highest lower bound of those dated on or
before the date.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any, Literal

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.transforms import blended_transform_factory

from innolab.analysis.colours import FREE, colours
from innolab.metrics import better

Direction = Literal["max", "min"]

LEDGER_COLUMNS = ["value", "date", "status", "kind", "holder", "source"]
STATUSES = ("verified", "reported", "refuted")
KINDS = ("record", "lower_bound", "upper_bound")
# the tightest bound of a kind is the best value in this order
BOUND_ORDER: dict[str, Direction] = {"upper_bound": "min", "lower_bound": "max"}
RECORD_COLUMNS = ["date", "record", "holder", "source", "status", "held_since", "new"]
BOUND_COLUMNS = ["date", "kind", "bound", "holder", "source", "new"]
PLACED_COLUMNS = ["date", "value", "valid", "label", "record"]
RECORD_COLOUR = FREE[0]  # the record's line: a colour no agent holds


class FrontierAnalysisError(ValueError):
    """A ledger or a runs table that breaks a rule; the message names the column and the rule."""


def _timestamps(values: pd.Series, column: str) -> pd.Series:
    """Timestamps from dates, timestamps, seconds since the epoch or text (ISO 8601, YYYY[-MM]).

    Args:
        values: The values.
        column: The column's name, for the error message.

    Returns:
        Timestamps without a time zone (UTC for an aware one), in nanoseconds.

    Raises:
        FrontierAnalysisError: A value that is not a date.
    """
    try:
        if pd.api.types.is_datetime64_any_dtype(values):
            stamps = values
        elif pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            stamps = pd.to_datetime(values, unit="s", utc=True)
        else:
            stamps = pd.to_datetime(values.astype(str), format="ISO8601", utc=True)
    except (ValueError, TypeError, OverflowError) as error:
        raise FrontierAnalysisError(
            f"column '{column}': not a date (YYYY-MM-DD, YYYY-MM or YYYY): {error}"
        ) from None
    if getattr(stamps.dt, "tz", None) is not None:
        stamps = stamps.dt.tz_convert("UTC").dt.tz_localize(None)
    return stamps.astype("datetime64[ns]")


def _dates(values: pd.Series, column: str) -> pd.Series:
    """Dates as day timestamps (midnight); a month or a year alone is its first day.

    Args:
        values: The dates (as `_timestamps` reads them).
        column: The column's name, for the error message.

    Returns:
        Timestamps at midnight, without a time zone.

    Raises:
        FrontierAnalysisError: A value that is not a date.
    """
    return _timestamps(values, column).dt.floor("D")


def checked_ledger(ledger: pd.DataFrame) -> pd.DataFrame:
    """A ledger DataFrame checked and put in date order.

    Args:
        ledger: One row per entry, with the columns of `LEDGER_COLUMNS`.

    Returns:
        A copy with `date` as day timestamps, sorted by date (the given order among equal dates).

    Raises:
        FrontierAnalysisError: A missing column, an unknown status or kind, a value that is not
            a finite number, a date that is not a date, or no record that is not refuted.
    """
    missing = [c for c in LEDGER_COLUMNS if c not in ledger.columns]
    if missing:
        raise FrontierAnalysisError(f"ledger lacks the columns {missing}")
    for column, allowed in (("status", STATUSES), ("kind", KINDS)):
        unknown = sorted(set(ledger[column]) - set(allowed))
        if unknown:
            raise FrontierAnalysisError(
                f"column '{column}': {unknown} not among {list(allowed)}"
            )
    values = pd.to_numeric(ledger["value"], errors="coerce")
    if not np.isfinite(values.to_numpy(dtype=float)).all():
        raise FrontierAnalysisError("column 'value': every entry needs a finite number")
    checked = ledger.assign(value=values.astype(float), date=_dates(ledger["date"], "date"))
    if not ((checked["kind"] == "record") & (checked["status"] != "refuted")).any():
        raise FrontierAnalysisError("ledger: needs at least one record that is not refuted")
    return checked.sort_values("date", kind="stable").reset_index(drop=True)


def readable(frame: pd.DataFrame, ledger: pd.DataFrame) -> pd.DataFrame:
    """A frontier table as a person reads it: every digit of a value, each date to its precision.

    Values (`value`, `record`, `bound`) are written in full (the shortest text that reads back as
    the same float: 17 significant digits where the value has them, never pandas' 6 decimals);
    dates (`date`, `held_since`) as the ledger gives them: an entry dated only by its year reads
    "2016", by its month "2025-05", never as the first day of that period.

    Args:
        frame: A ledger, `record_over_time`, `bounds_over_time` or `place_runs` table.
        ledger: The ledger (its `date_precision`, where present, says how each date is known).

    Returns:
        A copy with those columns as text.
    """
    precision: dict[pd.Timestamp, str] = {}
    if "date_precision" in ledger:
        rank = {"year": 0, "month": 1, "day": 2}
        for day, known in zip(_dates(ledger["date"], "date"), ledger["date_precision"],
                              strict=True):
            if rank.get(str(known), 2) >= rank.get(precision.get(day, "year"), 0):
                precision[day] = str(known)
    formats = {"year": "%Y", "month": "%Y-%m", "day": "%Y-%m-%d"}

    def day_text(value: Any) -> str:
        if value is None or (isinstance(value, float) and np.isnan(value)):
            return ""
        day = _dates(pd.Series([value], dtype=object), "date").iloc[0]
        return day.strftime(formats[precision.get(day, "day")])

    out = frame.copy()
    for column in ("value", "record", "bound"):
        if column in out:
            out[column] = [repr(float(v)) if pd.notna(v) else "" for v in out[column]]
    for column in ("date", "held_since"):
        if column in out:
            out[column] = [day_text(v) for v in out[column]]
    return out


def _best_over_time(entries: pd.DataFrame, order: Direction) -> list[dict[str, Any]]:
    """The best entry as of each distinct date of the entries (already in date order).

    Args:
        entries: Non-refuted entries of one kind, sorted by date.
        order: "max" or "min": which value is best.

    Returns:
        One row per date: the date, the best entry as of it and whether it changed that day.
    """
    best: dict[str, Any] | None = None
    rows = []
    for date, group in entries.groupby("date", sort=True):
        changed = False
        for entry in group.to_dict("records"):
            if best is None or better(entry["value"], best["value"], order):
                best, changed = entry, True
        rows.append({"date": date, "best": best, "new": changed})
    return rows


def record_over_time(ledger: pd.DataFrame, direction: Direction) -> pd.DataFrame:
    """The record (V*) as of each date a record entry carries: the frontier as a step function.

    Args:
        ledger: The ledger (see the module).
        direction: The objective's direction, "max" or "min".

    Returns:
        One row per distinct date of a non-refuted record, oldest first: `date`, `record` (the
        best value as of that date), `holder`, `source` and `status` of the entry that holds it,
        `held_since` (that entry's date) and `new` (whether the record changed that day).

    Raises:
        FrontierAnalysisError: A ledger that breaks a rule of `checked_ledger`, or a direction that
            is neither "max" nor "min".
    """
    if direction not in ("max", "min"):
        raise FrontierAnalysisError(f"direction must be 'max' or 'min', got {direction!r}")
    checked = checked_ledger(ledger)
    records = checked[(checked["kind"] == "record") & (checked["status"] != "refuted")]
    rows = [
        {"date": row["date"], "record": row["best"]["value"], "holder": row["best"]["holder"],
         "source": row["best"]["source"], "status": row["best"]["status"],
         "held_since": row["best"]["date"], "new": row["new"]}
        for row in _best_over_time(records, direction)
    ]
    return pd.DataFrame(rows, columns=RECORD_COLUMNS)


def bounds_over_time(ledger: pd.DataFrame) -> pd.DataFrame:
    """The tightest proven bound of each kind as of each date a bound entry carries.

    Args:
        ledger: The ledger (see the module).

    Returns:
        One row per kind and distinct date of a non-refuted bound, by kind then date: `date`,
        `kind`, `bound` (the lowest upper or highest lower bound as of that date), `holder` and
        `source` of the entry that proves it, and `new` (whether it tightened that day). Empty
        when the ledger has no bound.

    Raises:
        FrontierAnalysisError: A ledger that breaks a rule of `checked_ledger`.
    """
    checked = checked_ledger(ledger)
    rows = []
    for kind, order in BOUND_ORDER.items():
        bounds = checked[(checked["kind"] == kind) & (checked["status"] != "refuted")]
        rows += [
            {"date": row["date"], "kind": kind, "bound": row["best"]["value"],
             "holder": row["best"]["holder"], "source": row["best"]["source"], "new": row["new"]}
            for row in _best_over_time(bounds, order)
        ]
    return pd.DataFrame(rows, columns=BOUND_COLUMNS)


def value_at(steps: pd.DataFrame, column: str, dates: Sequence[Any] | pd.Series) -> np.ndarray:
    """A step function's value on given dates (the value of its last step on or before each).

    Args:
        steps: A table of `record_over_time` or of one kind of `bounds_over_time`.
        column: The value's column ("record" or "bound").
        dates: The dates (dates, timestamps or ISO text; a timestamp counts by its day).

    Returns:
        The values, NaN for a date before the first step.

    Raises:
        FrontierAnalysisError: A date that is not a date.
    """
    days = _dates(pd.Series(list(dates), dtype=object), "dates").to_numpy()
    index = np.searchsorted(steps["date"].to_numpy(dtype="datetime64[ns]"), days, side="right")
    values = steps[column].to_numpy(dtype=float)
    return np.where(index > 0, values[np.maximum(index - 1, 0)], np.nan)


def place_runs(
    runs: pd.DataFrame, record: pd.DataFrame, *, start: str, task: str | None = None,
    value: str = "score", label: str | None = "agent",
) -> pd.DataFrame:
    """Runs as points on the record's chart: at their start date, with their value.

    Args:
        runs: A runs table (innolab.results), one row per run.
        record: The task's `record_over_time`.
        start: The column of each run's start (a timestamp, ISO text or seconds since the epoch;
            `v_star_as_of` of a runs table read with `as_of="run"` is each run's start day).
        task: Keep only the runs of this task (column `task`); None keeps every run.
        value: The column of each run's value in the task's own units (the hidden evaluator's
            score); a run that is not `valid` (where that column exists) has none (NaN).
        label: The column that names a run's group in the legend (None: one group).

    Returns:
        One row per run with a start, in start order: `date` (the start as a timestamp),
        `value`, `valid`, `label`, `record` (the record as of the start's day, V* as of the
        run), and `config_id` where the runs table has it.

    Raises:
        FrontierAnalysisError: A missing column or a start that is not a date.
    """
    needed = [start, value] + ([label] if label else []) + (["task"] if task else [])
    missing = [c for c in needed if c not in runs.columns]
    if missing:
        raise FrontierAnalysisError(f"runs table lacks the columns {missing}")
    chosen = runs[runs["task"] == task] if task else runs
    chosen = chosen[chosen[start].notna()]
    stamps = _timestamps(chosen[start], start)
    valid = chosen["valid"].fillna(False).astype(bool) if "valid" in chosen else (
        chosen[value].notna())
    values = pd.to_numeric(chosen[value], errors="coerce").where(valid)
    placed = pd.DataFrame({
        "date": stamps.to_numpy(),
        "value": values.to_numpy(dtype=float),
        "valid": valid.to_numpy(dtype=bool),
        "label": chosen[label].astype(str).to_numpy() if label else "runs",
        "record": value_at(record, "record", stamps.tolist()),
    })
    if "config_id" in chosen:
        placed["config_id"] = chosen["config_id"].to_numpy()
    return placed.sort_values("date", kind="stable").reset_index(drop=True)


def _limits(values: Sequence[float], pad: float = 0.08) -> tuple[float, float]:
    """Axis limits around finite values, padded (a single value gets a small band).

    Args:
        values: The values to fit.
        pad: The padding, as a share of the range.

    Returns:
        (low, high).
    """
    finite = [float(v) for v in values if np.isfinite(v)]
    lo, hi = min(finite), max(finite)
    span = hi - lo or (abs(hi) * 1e-3 or 1.0)
    return lo - pad * span, hi + pad * span


def _steps(ax, dates: pd.Series, values: pd.Series, end: pd.Timestamp, **style: Any) -> None:
    """A step line (where="post") through the dates, held to `end`.

    Args:
        ax: The axes.
        dates: The steps' dates.
        values: The values from each date on.
        end: The chart's right end.
        **style: Line style for `Axes.step`.
    """
    xs = [*dates, max(end, dates.iloc[-1])]
    ys = [*values, values.iloc[-1]]
    ax.step(xs, ys, where="post", **style)


def frontier_chart(
    ledger: pd.DataFrame, direction: Direction, *, placed: pd.DataFrame | None = None,
    paper_date: datetime.date | str | None = None, end: datetime.date | str | None = None,
    since: datetime.date | str | None = None, title: str = "",
) -> Figure:
    """Draw a task's record over time as a step chart, its proven bounds, the paper's date, runs.

    The top panel fits everything (record, bounds and runs: the headroom left to a bound); the
    bottom one, drawn when there is anything else to fit, zooms on the record's steps, marking
    what lies off it at its edge (▲ above, ▼ below). Every record entry is a point (filled:
    verified, hollow: reported, a cross: refuted, never counted); runs without a valid value
    sit as crosses on the bottom edge.

    Args:
        ledger: The ledger (see the module).
        direction: The objective's direction.
        placed: Runs from `place_runs`, or None.
        paper_date: The paper's date, marked by a vertical line (None: not marked).
        end: The chart's right end (None: the last entry, run or the paper's date, whichever is
            later: not today, so that one ledger and one set of runs draw one chart any day).
        since: The chart's left end (None: the first entry's date).
        title: The figure's title.

    Returns:
        The figure.

    Raises:
        FrontierAnalysisError: A ledger that breaks a rule of `checked_ledger`.
    """
    checked = checked_ledger(ledger)
    record = record_over_time(checked, direction)
    bounds = bounds_over_time(checked)
    placed = placed if placed is not None else pd.DataFrame(columns=PLACED_COLUMNS)
    # the last dated thing drawn, not today: the same ledger and runs draw the same chart any day
    last = max([checked["date"].max(), *([placed["date"].max()] if len(placed) else []),
                *([_day(paper_date)] if paper_date is not None else [])])
    end_at = _day(end) if end is not None else last
    start_at = _day(since) if since is not None else checked["date"].min()
    shown = record[record["date"] >= start_at]
    held = record[record["date"] < start_at].tail(1).assign(date=start_at)
    shown = pd.concat([held, shown], ignore_index=True) if len(held) else shown

    run_values = placed["value"].dropna().tolist()
    wide = shown["record"].tolist() + bounds["bound"].tolist() + run_values
    panels = [("all", _limits(wide))]
    if len(bounds) or run_values:
        panels.append(("record", _limits(shown["record"].tolist())))
    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 3.4 * len(panels)), sharex=True,
                             squeeze=False)
    for ax, (name, (lo, hi)) in zip(axes[:, 0], panels, strict=True):
        ax.set_ylim(lo, hi)
        _draw_record(ax, checked, shown, end_at, lo, hi, RECORD_COLOUR)
        _draw_bounds(ax, bounds, end_at, lo, hi)
        _draw_runs(ax, placed, lo, hi)
        if paper_date is not None:
            paper_at = _day(paper_date)
            ax.axvline(paper_at, color="grey", ls=":", lw=1.2,
                       label=f"the paper's date ({paper_at.date()})")
            paper_v_star = value_at(record, "record", [paper_at])[0]
            if np.isfinite(paper_v_star) and lo <= paper_v_star <= hi:
                ax.scatter([paper_at], [paper_v_star], marker="*", s=110, color="grey",
                           zorder=5, label=f"the paper's V* ({paper_v_star:.10g})")
        if name == "record":
            ax.ticklabel_format(axis="y", useOffset=False)
        ax.set_ylabel("value" + (" (zoom on the record)" if name == "record" else ""))
        ax.set_xlim(start_at - pd.Timedelta(days=30), end_at + pd.Timedelta(days=30))
    axes[0, 0].legend(fontsize=7, loc="best")
    axes[-1, 0].set_xlabel("date (entries: when first published or seen; runs: when started)")
    better_word = "higher" if direction == "max" else "lower"
    fig.suptitle(title or f"The record over time ({better_word} is better)")
    fig.tight_layout()
    return fig


def _day(value: datetime.date | str) -> pd.Timestamp:
    """One date as a day timestamp (as `_dates` reads it).

    Args:
        value: The date.

    Returns:
        The timestamp at midnight.
    """
    return _dates(pd.Series([value], dtype=object), "date").iloc[0]


def _edge(value: float, lo: float, hi: float) -> tuple[float, str | None]:
    """A value clamped into the axis, with the marker that says it lies off it.

    Args:
        value: The value.
        lo: The axis's lower limit.
        hi: The axis's upper limit.

    Returns:
        (the value or the nearest limit, "^" above, "v" below or None inside).
    """
    if value > hi:
        return hi, "^"
    if value < lo:
        return lo, "v"
    return value, None


def _draw_record(ax, ledger: pd.DataFrame, shown: pd.DataFrame, end: pd.Timestamp,
                 lo: float, hi: float, colour: Any) -> None:
    """The record as a step line, each record entry as a point by its status.

    Args:
        ax: The axes.
        ledger: The checked ledger.
        shown: The record's steps in view.
        end: The chart's right end.
        lo: The axis's lower limit.
        hi: The axis's upper limit.
        colour: The record's colour.
    """
    _steps(ax, shown["date"], shown["record"], end, color=colour, lw=1.8,
           label="record (V* as of the date)")
    entries = ledger[(ledger["kind"] == "record") & (ledger["date"] >= shown["date"].iloc[0])]
    # drawn in this order, each above the one before: a hollow "reported" ring (larger) never
    # hides a filled "verified" point of the same date and value, which sits inside it
    styles = {"reported": (dict(marker="o", facecolors="white", edgecolors=colour), 46, 3),
              "verified": (dict(marker="o", facecolors=colour, edgecolors=colour), 18, 4),
              "refuted": (dict(marker="x", c="#d62728"), 30, 5)}
    for status, (style, size, order) in styles.items():
        part = entries[entries["status"] == status]
        for date, value in zip(part["date"], part["value"], strict=True):
            shown, marker = _edge(float(value), lo, hi)
            ax.scatter([date], [shown], s=size, zorder=order,
                       **{**style, "marker": marker or style["marker"]})
        if len(part):
            ax.scatter([], [], s=size, label=f"{status} entry", **style)


def _draw_bounds(ax, bounds: pd.DataFrame, end: pd.Timestamp, lo: float, hi: float) -> None:
    """Each kind of proven bound as a dashed step line (horizontal between its dates).

    Args:
        ax: The axes.
        bounds: `bounds_over_time`.
        end: The chart's right end.
        lo: The axis's lower limit.
        hi: The axis's upper limit.
    """
    for kind, part in bounds.groupby("kind", sort=True):
        tightest = float(part["bound"].iloc[-1])
        shown, marker = _edge(tightest, lo, hi)
        if marker is None:
            _steps(ax, part["date"], part["bound"], end, color="black", ls="--", lw=1.1,
                   label=f"proven {kind.replace('_', ' ')}")
        else:
            ax.annotate(f"{marker} proven {kind.replace('_', ' ')} {tightest:.10g}",
                        (0.01, shown), xycoords=("axes fraction", "data"), fontsize=7,
                        va="top" if marker == "^" else "bottom")


def _draw_runs(ax, placed: pd.DataFrame, lo: float, hi: float) -> None:
    """Runs at their start dates: valid ones at their value, the others on the bottom edge.

    Runs of one label that fall on one place (a sweep's runs start within a day of each other) are
    counted there ("×5"), not left stacked out of sight.

    Args:
        ax: The axes.
        placed: `place_runs`.
        lo: The axis's lower limit.
        hi: The axis's upper limit.
    """
    from innolab.analysis.plots import _clusters

    edge = blended_transform_factory(ax.transData, ax.transAxes)
    groups = list(placed.groupby("label", sort=True))
    shades = colours(label for label, _ in groups)  # an agent's own colour, as in every figure
    for order, (label, part) in enumerate(groups):
        colour = shades[label]
        valid = part[part["value"].notna()]
        shown = [_edge(float(value), lo, hi) for value in valid["value"]]
        for (value, marker), date in zip(shown, valid["date"], strict=True):
            ax.scatter([date], [value], marker=marker or "D", s=30, color=colour, zorder=4)
        if len(valid):
            ax.scatter([], [], marker="D", s=30, color=colour, label=f"runs: {label}")
            dates = [ax.xaxis.convert_units(d) for d in valid["date"]]
            values = [v for v, _ in shown]
            for group in _clusters(ax, dates, values, [str(label)] * len(values)):
                if len(group) > 1:
                    ax.annotate(f"×{len(group)}", (dates[group[0]], values[group[0]]),
                                textcoords="offset points", xytext=(6, 3 + 9 * order),
                                fontsize=7, color=colour)
        failed = part[part["value"].isna()]
        if len(failed):
            ax.scatter(failed["date"], [0.02] * len(failed), transform=edge, marker="x", s=30,
                       color=colour, zorder=4, clip_on=False,
                       label=f"runs: {label}, no valid value")
            for day, count in failed.groupby(failed["date"].dt.normalize()).size().items():
                if count > 1:
                    ax.annotate(f"×{count}", (day, 0.02), xycoords=("data", "axes fraction"),
                                textcoords="offset points", xytext=(6, 3 + 9 * order),
                                fontsize=7, color=colour)
