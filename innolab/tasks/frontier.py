"""The frontier as a dated ledger: entries with their dates, V* as of any date, proven bounds.

Each entry of a task's ledger is a published value (a record) or a proven bound, with its holder,
source, the date it was first published or seen, its status and its published digits.

Dates. An entry's date is written as published: `YYYY-MM-DD`, `YYYY-MM` (an arXiv id gives the
year and the month) or `YYYY` (no better date known). A date known only to the month or the year
counts from the *first day* of that month or year: the entry may have been public from then, and a
larger frontier can only make a gain smaller (the conservative V* policy), so `v_star_as_of(d)`
includes every entry that may have been public on `d`. The paper's date (`PAPER_DATE`) gives the
V* known then; where data/paper/ prints one (CirclePacking: 2.635, AlphaEvolve's value cut to three
decimals) it agrees to the printed digits (tests/test_frontier.py). "Today" is the UTC date
(`utc_today()`), the same day a run's start is read in.

V* as of a date is the best non-refuted record dated on or before it; among equal values the
earliest entry holds it (a copied record ties, it does not win).

Status: the ledger says what innolab's own checks say. A record is `verified` only when innolab
holds its published construction (`construction`: a file in the task folder, in the task's
submission format) and innolab's hidden evaluator accepts that file with zero tolerance, at the
entry's value (within `AGREEMENT_RTOL`, or the entry's tie margin where its digits are fewer: the
publisher's float64 evaluation may round differently from innolab's). A published value whose
construction innolab's exact check rejects is `reported` (a rounding-level violation) or `refuted`
(a wrong value), and its note quotes every violation innolab measures; a value whose construction
innolab does not hold is `reported`. The task's `v_star_reproduced` is the best verified value
(None when there is none). `innolab tasks check` re-runs every construction and fails a ledger
that breaks the rule (innolab.tasks.checks.ledger_constructions).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# arXiv 2512.01822 v1 (InnoGym), 2025-12-01: the date of the paper's V*.
PAPER_DATE = datetime.date(2025, 12, 1)

Precision = Literal["day", "month", "year"]
Status = Literal["verified", "reported", "refuted"]
Kind = Literal["record", "lower_bound", "upper_bound"]
DATE_PATTERN = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")
# How closely innolab's score of a construction must agree with the value published for it:
# 1e-12 relative, 10^3 times the largest difference measured on the built-in ledgers (1.1e-15,
# AlphaEvolve's heilbronn-convex-13: innolab computes the areas exactly and rounds once) and 10^3
# times below the gap between distinct published records (circle-packing-26: 2.63598308 and
# 2.6359830849, 1.9e-9 apart relative).
AGREEMENT_RTOL = 1e-12


class FrontierError(ValueError):
    """A ledger or a date breaks a rule; the message names the field and the rule."""



def utc_today() -> datetime.date:
    """Today's date in UTC: the day V* "as of today" and a score's `v_star_as_of` are read in."""
    return datetime.datetime.now(datetime.UTC).date()


def parse_date(value: Any, field: str = "date") -> tuple[datetime.date, Precision]:
    """Read a date as published: YYYY-MM-DD, YYYY-MM or YYYY (a year alone may be an integer).

    Args:
        value: The date (a string, an integer year, or a `datetime.date`).
        field: The field's name, for the error message.

    Returns:
        The first day of the period the date names, and its precision.

    Raises:
        FrontierError: Not one of the three forms, or not a real date.
    """
    if isinstance(value, datetime.datetime):
        value = value.date()
    if isinstance(value, datetime.date):
        return value, "day"
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    match = DATE_PATTERN.match(text) if isinstance(text, str) else None
    if match is None:
        raise FrontierError(
            f"field '{field}': {value!r} is not a date (YYYY-MM-DD, YYYY-MM or YYYY)"
        )
    year, month, day = match.groups()
    try:
        parsed = datetime.date(int(year), int(month or 1), int(day or 1))
    except ValueError as error:
        raise FrontierError(f"field '{field}': {value!r} is not a real date: {error}") from None
    precision: Precision = "day" if day else "month" if month else "year"
    return parsed, precision


def format_date(date: datetime.date, precision: Precision) -> str:
    """Write a date to its precision (the inverse of `parse_date`).

    Args:
        date: The first day of the period.
        precision: "day", "month" or "year".

    Returns:
        YYYY-MM-DD, YYYY-MM or YYYY.
    """
    return {"day": date.isoformat(), "month": date.strftime("%Y-%m"), "year": f"{date.year:04d}"}[
        precision
    ]


def as_date(value: datetime.date | str, field: str = "as_of") -> datetime.date:
    """The date a question is asked for: a `datetime.date`, "today", or an ISO date string.

    A month or a year alone stands for its first day (the rule of the ledger's dates).

    Args:
        value: The date.
        field: The field's name, for the error message.

    Returns:
        The date.

    Raises:
        FrontierError: Not a date.
    """
    if isinstance(value, str) and value.strip().lower() == "today":
        return utc_today()
    if isinstance(value, str) and "T" in value:
        try:
            return datetime.datetime.fromisoformat(value).date()
        except ValueError:
            raise FrontierError(f"field '{field}': {value!r} is not a date") from None
    return parse_date(value, field)[0]


class LedgerEntry(BaseModel):
    """One dated entry of a task's ledger: a record or a proven bound.

    Attributes:
        value: The value in full, as published.
        digits: The decimals as published (None: not known); the tie margin is 0.5·10^-digits.
        holder: Who holds it.
        source: Where it was published (paper, repository, leaderboard).
        date: The first day of the period it was first published or seen in.
        date_precision: "day", "month" or "year" (see the module's rule).
        status: "verified" (innolab's evaluator accepts the published construction it holds, at
            this value), "reported" (published; its construction is not held, or fails innolab's
            exact check by a rounding-level violation stated in the note) or "refuted"
            (published, but wrong; never counts).
        kind: "record", or a proven "lower_bound" / "upper_bound".
        note: Anything else worth knowing (ties, conventions, innolab's measured violations).
        parts: The values it sums, by part (a task scored as a sum over instances), or None.
        construction: The published construction innolab holds: a path relative to the task's
            folder, in the task's submission format (required for "verified"; records only).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: float
    digits: int | None = Field(default=None, ge=0, le=20)
    holder: str = Field(min_length=1)
    source: str = Field(min_length=1)
    date: datetime.date
    date_precision: Precision = "day"
    status: Status
    kind: Kind = "record"
    note: str | None = None
    parts: dict[str, float] | None = None
    construction: str | None = None

    @model_validator(mode="before")
    @classmethod
    def read_date(cls, raw: Any) -> Any:
        """Read `date` as published (YYYY-MM-DD, YYYY-MM or YYYY) into a date and its precision.

        Args:
            raw: The entry as given.

        Returns:
            The entry with `date` a `datetime.date` and `date_precision` set.

        Raises:
            ValueError: A date in none of the three forms, or a precision given beside a
                string date that disagrees with it.
        """
        if not isinstance(raw, dict) or "date" not in raw:
            return raw
        if isinstance(raw["date"], datetime.date) and "date_precision" in raw:
            return raw
        date, precision = parse_date(raw["date"])
        given = raw.get("date_precision")
        if given is not None and given != precision and not isinstance(raw["date"], datetime.date):
            raise ValueError(
                f"date_precision {given!r} disagrees with the date {raw['date']!r} ({precision})"
            )
        return {**raw, "date": date, "date_precision": given or precision}

    @field_validator("value")
    @classmethod
    def finite(cls, value: float) -> float:
        """A ledger value is a finite number.

        Args:
            value: The value.

        Returns:
            The value.

        Raises:
            ValueError: NaN or infinite.
        """
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @model_validator(mode="after")
    def consistent(self) -> LedgerEntry:
        """Digits hold the value, parts sum to it, and verified names a construction.

        Returns:
            The entry.

        Raises:
            ValueError: Digits fewer than the value's decimals, parts that do not sum to it, a
                verified entry without a construction, or a construction that is not a record's
                or not a relative path inside the task's folder.
        """
        if self.digits is not None and round(self.value, self.digits) != self.value:
            raise ValueError(
                f"value {self.value!r} has more decimals than its digits ({self.digits})"
            )
        if self.parts is not None:
            total = math.fsum(self.parts.values())
            if not self.parts or not math.isclose(total, self.value, rel_tol=1e-12, abs_tol=1e-12):
                raise ValueError(f"parts sum to {total!r}, not to the value {self.value!r}")
        if self.construction is not None:
            if self.kind != "record":
                raise ValueError(f"field 'construction': a {self.kind} is proven, not "
                                 "constructed; only a record names a construction")
            path = PurePosixPath(self.construction)
            if (path.is_absolute() or ".." in path.parts or not path.parts
                    or "\\" in self.construction):
                raise ValueError(f"field 'construction': {self.construction!r} must be a relative "
                                 "path inside the task's folder (forward slashes, no '..')")
        elif self.status == "verified":
            raise ValueError("field 'construction': required with status 'verified' (the "
                             "published construction innolab checks, a file in the task's "
                             "folder); a value whose construction innolab does not hold is "
                             "'reported'")
        return self

    def agrees(self, score: float) -> bool:
        """Whether innolab's score of the construction is this entry's published value.

        Args:
            score: The score innolab's evaluator gives the construction.

        Returns:
            |score − value| ≤ max(AGREEMENT_RTOL·|value|, the tie margin).
        """
        return abs(score - self.value) <= max(AGREEMENT_RTOL * abs(self.value), self.tie_margin)

    @property
    def date_text(self) -> str:
        """The date as published (to its precision)."""
        return format_date(self.date, self.date_precision)

    @property
    def tie_margin(self) -> float:
        """Half a unit of the last published digit (0.0 when the digits are not known)."""
        return 0.0 if self.digits is None else 0.5 * 10.0 ** (-self.digits)

    @property
    def is_bound(self) -> bool:
        """Whether it is a proven bound rather than a record."""
        return self.kind != "record"

    def as_json(self) -> dict[str, Any]:
        """The entry as plain JSON (the date to its precision; unset fields left out).

        Returns:
            The entry's fields.
        """
        out: dict[str, Any] = {
            "value": self.value, "digits": self.digits, "holder": self.holder,
            "source": self.source, "date": self.date_text, "status": self.status,
            "kind": self.kind,
        }
        if self.note:
            out["note"] = self.note
        if self.parts is not None:
            out["parts"] = dict(self.parts)
        if self.construction is not None:
            out["construction"] = self.construction
        return out


@dataclass(frozen=True)
class VStarAsOf:
    """V* as of a date.

    Attributes:
        value: V*, the best non-refuted record dated on or before `as_of`.
        as_of: The date asked.
        entry: The ledger entry that holds it.
    """

    value: float
    as_of: datetime.date
    entry: LedgerEntry


def better(a: float, b: float, direction: Literal["max", "min"]) -> bool:
    """Whether `a` is strictly better than `b` in the objective's direction.

    Args:
        a: A value.
        b: Another value.
        direction: "max" or "min".

    Returns:
        a > b when maximising, a < b when minimising.
    """
    return a > b if direction == "max" else a < b


def far_side(direction: Literal["max", "min"]) -> Kind:
    """The kind of bound that lies beyond V*: an upper bound when maximising, else a lower one.

    Args:
        direction: "max" or "min".

    Returns:
        "upper_bound" or "lower_bound".
    """
    return "upper_bound" if direction == "max" else "lower_bound"


def counted(entries: list[LedgerEntry], kind: Kind, date: datetime.date) -> list[LedgerEntry]:
    """The non-refuted entries of one kind dated on or before a date, in date order.

    Args:
        entries: The ledger.
        kind: "record", "lower_bound" or "upper_bound".
        date: The date.

    Returns:
        Those entries, oldest first (file order among equal dates).
    """
    chosen = [e for e in entries if e.kind == kind and e.status != "refuted" and e.date <= date]
    return sorted(chosen, key=lambda e: e.date)


def best_as_of(
    entries: list[LedgerEntry], kind: Kind, direction: Literal["max", "min"],
    date: datetime.date,
) -> LedgerEntry | None:
    """The best entry of a kind on a date; the earliest among equal values.

    For records "best" follows the objective's direction; for a bound it is the tightest one,
    which lies on the same side (the lowest upper bound, the highest lower bound).

    Args:
        entries: The ledger.
        kind: "record", "lower_bound" or "upper_bound".
        direction: The objective's direction.
        date: The date.

    Returns:
        The entry, or None when none is dated on or before `date`.
    """
    order: Literal["max", "min"] = (
        direction if kind == "record" else "min" if kind == "upper_bound" else "max"
    )
    best: LedgerEntry | None = None
    for entry in counted(entries, kind, date):
        if best is None or better(entry.value, best.value, order):
            best = entry
    return best


def ledger_hash(entries: list[LedgerEntry]) -> str:
    """The ledger's fingerprint: sha256 of its canonical JSON, 12 hex digits.

    The canonical JSON lists the entries in (date, kind, value, holder) order with sorted keys,
    so the order they are written in does not matter.

    Args:
        entries: The ledger.

    Returns:
        12 hex digits.
    """
    rows = sorted((e.as_json() for e in entries),
                  key=lambda r: (r["date"], r["kind"], r["value"], r["holder"]))
    text = json.dumps(rows, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def headroom_closed(v: float, v_star: float, bound: float | None) -> float:
    """The share of the headroom between V* and a proven bound B that a value closes.

    (V − V*) / (B − V*): 0 at V*, 1 at the bound, negative below V*; the same formula in both
    directions (numerator and denominator change sign together).

    Args:
        v: The value V.
        v_star: V*.
        bound: The proven bound on the far side of V*, or None.

    Returns:
        The share, NaN with no bound, with no headroom left (B = V*) or with V not finite.
    """
    if bound is None or bound == v_star or not math.isfinite(v):
        return math.nan
    return (v - v_star) / (bound - v_star)


def check_ledger(entries: list[LedgerEntry], direction: Literal["max", "min"],
                 today: datetime.date | None = None) -> None:
    """Check a task's ledger as a whole.

    Rules: at least one non-refuted record; no entry dated after today; bounds only on the far
    side of V* (an upper bound when maximising, a lower bound when minimising); no counted record
    beyond a counted bound of its own date or earlier; parts, where given, name the same parts
    in every entry that has them.

    Args:
        entries: The ledger.
        direction: The objective's direction.
        today: Today's date (None: the system's).

    Raises:
        FrontierError: The first rule broken, naming the entry.
    """
    today = today or utc_today()
    if not any(e.kind == "record" and e.status != "refuted" for e in entries):
        raise FrontierError("field 'entries': needs at least one record that is not refuted")
    side = far_side(direction)
    names = None
    for i, entry in enumerate(entries):
        where = f"entries.{i}"
        if entry.date > today:
            raise FrontierError(
                f"field '{where}.date': {entry.date_text} lies in the future (today {today})"
            )
        if entry.is_bound and entry.kind != side:
            raise FrontierError(
                f"field '{where}.kind': a {entry.kind} of a task that {direction}imises lies on "
                f"the near side of V*; only a {side} is a bound here (a value reached is a record)"
            )
        if entry.parts is not None:
            if names is not None and set(entry.parts) != names:
                raise FrontierError(
                    f"field '{where}.parts': names {sorted(entry.parts)}, others name "
                    f"{sorted(names)}"
                )
            names = set(entry.parts)
    for i, entry in enumerate(entries):
        if entry.kind != "record" or entry.status == "refuted":
            continue
        bound = best_as_of(entries, side, direction, today)
        if bound is not None and better(entry.value, bound.value, direction):
            raise FrontierError(
                f"field 'entries.{i}.value': {entry.value!r} lies beyond the proven {side} "
                f"{bound.value!r} ({bound.holder}); mark it refuted or fix the bound"
            )


def record_steps(
    entries: list[LedgerEntry], direction: Literal["max", "min"]
) -> list[LedgerEntry]:
    """The record over time: the entries at which V* changed, oldest first.

    V* as of any date is the value of the last step dated on or before it (a step chart).

    Args:
        entries: The ledger.
        direction: The objective's direction.

    Returns:
        The entries that each set a new V* when they appeared (ties and refuted entries left out).
    """
    steps: list[LedgerEntry] = []
    for entry in counted(entries, "record", datetime.date.max):
        if not steps or better(entry.value, steps[-1].value, direction):
            steps.append(entry)
    return steps
