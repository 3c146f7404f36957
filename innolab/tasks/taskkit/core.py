"""What every problem's checks share: strict parsing, shape and range checks, violations, the CLI.

Rules that hold for every problem:

* the submission is a JSON object no larger than the task's byte limit; NaN, Infinity and unknown
  top-level keys are rejected (a reported score is never read: the objective is recomputed from the
  construction);
* numbers must be JSON numbers (not strings, not booleans) within float64's range; integer fields
  must be integers; an integer literal of more than `MAX_INT_DIGITS` digits is rejected by name,
  never converted;
* constraints are checked with zero tolerance: exactly in rational arithmetic where that is cheap
  (circles, points, triangles: a float64 value is a dyadic rational, so `fractions.Fraction` decides
  without rounding), exactly in Python integers (kissing vectors, schedules), or in float64
  (step-function objectives; the Erdős heights' rescaling and range are exact);
* every violated constraint is listed (up to `MAX_LISTED_VIOLATIONS`) with its magnitude.
"""

from __future__ import annotations

import importlib
import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_MAX_BYTES = 5_000_000
MAX_LISTED_VIOLATIONS = 20
# any integer beyond float64's range (about 1.8e308) has at least 309 digits
MAX_INT_DIGITS = 400
FLOAT_MAX = sys.float_info.max
# names a family module cannot take: this package's own modules
RESERVED_MODULES = ("core", "__init__", "__main__")


class Invalid(ValueError):
    """The submission breaks a rule; the message names the field and the rule."""


class HugeInt:
    """An integer literal too long to convert (Python refuses beyond 4,300 digits).

    Attributes:
        digits: Its number of digits, all that is kept of it.
    """

    def __init__(self, digits: int) -> None:
        """Keep the literal's digit count.

        Args:
            digits: The literal's number of digits.
        """
        self.digits = digits

    def __repr__(self) -> str:
        """Return "<integer of N digits>"."""
        return f"<integer of {self.digits} digits>"


# ----------------------------------------------------------------------------------- strict parsing


def _reject_constant(name: str) -> None:
    raise Invalid(f"JSON constant {name} is not allowed: every number must be finite")


def _parse_int(text: str) -> int | HugeInt:
    digits = len(text.lstrip("-"))
    return HugeInt(digits) if digits > MAX_INT_DIGITS else int(text)


def load_submission(path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, Any]:
    """Read a submission file: size-capped, strict JSON (no NaN/Infinity), a top-level object.

    Args:
        path: The submission file (a regular file, not a link).
        max_bytes: The size limit.

    Returns:
        The submission.

    Raises:
        Invalid: The file is missing, a link, too large, or not a strict JSON object.
    """
    path = Path(path)
    if path.is_symlink():
        raise Invalid(f"submission {path.name} is a symbolic link; submit a regular file")
    if not path.is_file():
        raise Invalid(f"submission {path.name} does not exist or is not a regular file")
    size = path.stat().st_size
    if size > max_bytes:
        raise Invalid(f"submission is {size} bytes; the limit is {max_bytes} bytes")
    with path.open("rb") as handle:
        raw = handle.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise Invalid(f"submission exceeds the limit of {max_bytes} bytes")
    return parse_submission(raw)


def parse_submission(raw: bytes | str) -> dict[str, Any]:
    """Parse a submission strictly: UTF-8 JSON, no NaN/Infinity, a top-level object.

    Integer literals too long to convert are kept as HugeInt (rejected by name later).

    Args:
        raw: The submission's bytes or text.

    Returns:
        The submission.

    Raises:
        Invalid: The text is not UTF-8, not valid JSON, nested too deeply, holds a NaN or
            Infinity, or is not an object.
    """
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        data = json.loads(text, parse_constant=_reject_constant, parse_int=_parse_int)
    except UnicodeDecodeError:
        raise Invalid("submission is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise Invalid(f"submission is not valid JSON: {error.msg} at line {error.lineno}") from None
    except RecursionError:
        raise Invalid("submission is nested too deeply") from None
    if not isinstance(data, dict):
        raise Invalid(f"submission must be a JSON object, got {type(data).__name__}")
    return data


def only_keys(data: dict[str, Any], allowed: tuple[str, ...]) -> None:
    """Check that a submission holds exactly the allowed fields.

    Args:
        data: The submission.
        allowed: Its fields.

    Raises:
        Invalid: A field is unknown or missing.
    """
    extra = sorted(set(data) - set(allowed))
    if extra:
        raise Invalid(
            f"unknown field(s) {extra}: a submission holds only {list(allowed)}; "
            "scores are recomputed, never read"
        )
    missing = [k for k in allowed if k not in data]
    if missing:
        raise Invalid(f"missing field(s) {missing}")


def is_real(value: object) -> bool:
    """Test whether a value is a JSON number (an int or a float, not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _out_of_range(item: Any, where: str) -> Invalid:
    if isinstance(item, HugeInt):
        return Invalid(f"{where} is an integer of {item.digits} digits: it must lie within "
                       f"float64's range "
                       f"(magnitude at most {FLOAT_MAX:.4g})")
    return Invalid(
        f"{where} must lie within float64's range (magnitude at most {FLOAT_MAX:.4g})")


def finite_number(item: Any, where: str) -> float:
    """Read a JSON number representable as a finite float64.

    Args:
        item: The value.
        where: The field's name, for the error.

    Returns:
        The value as a float.

    Raises:
        Invalid: It is not a number, out of float64's range, or not finite (naming the field).
    """
    if isinstance(item, HugeInt):
        raise _out_of_range(item, where)
    if not is_real(item):
        raise Invalid(f"{where} must be a number, got {type(item).__name__}")
    try:
        value = float(item)
    except OverflowError:
        raise _out_of_range(item, where) from None
    if not math.isfinite(value):
        raise Invalid(f"{where} must be finite")
    return value


def _matrix(
    value: Any, key: str, rows: int | None, cols: int, check_item: Any, kind: str
) -> list[list[Any]]:
    """The shape checks shared by every matrix field; `check_item(item, where)` checks one entry."""
    if not isinstance(value, list):
        raise Invalid(f"{key} must be a list of rows, got {type(value).__name__}")
    if rows is not None and len(value) != rows:
        raise Invalid(f"{key} must have exactly {rows} rows, got {len(value)}")
    for i, row in enumerate(value):
        if not isinstance(row, list) or len(row) != cols:
            raise Invalid(f"{key}[{i}] must be a list of {cols} {kind}")
        for j, item in enumerate(row):
            check_item(item, f"{key}[{i}][{j}]")
    return value


def real_matrix(data: dict[str, Any], key: str, rows: int | None, cols: int) -> np.ndarray:
    """Read a matrix field: a list of `rows` lists of `cols` finite JSON numbers.

    Args:
        data: The submission.
        key: The field.
        rows: The number of rows; None for any.
        cols: The number of columns.

    Returns:
        The matrix as float64.

    Raises:
        Invalid: The field has the wrong shape or an entry is not a finite number.
    """
    value = _matrix(data[key], key, rows, cols, finite_number, "numbers")
    return np.array(value, dtype=np.float64).reshape(len(value), cols)


def real_vector(
    data: dict[str, Any], key: str, min_len: int, max_len: int, max_abs: float = 1e100
) -> np.ndarray:
    """Read a vector field: a list of finite JSON numbers.

    Args:
        data: The submission.
        key: The field.
        min_len: The fewest values.
        max_len: The most values.
        max_abs: The largest magnitude allowed.

    Returns:
        The vector as float64.

    Raises:
        Invalid: The field is not a list, has a length out of range, or an entry is not a
            finite number within `max_abs`.
    """
    value = data[key]
    if not isinstance(value, list):
        raise Invalid(f"{key} must be a list of numbers, got {type(value).__name__}")
    if not min_len <= len(value) <= max_len:
        raise Invalid(
            f"{key} must have between {min_len} and {max_len} values, got {len(value)}")
    for i, item in enumerate(value):
        number = finite_number(item, f"{key}[{i}]")
        if abs(number) > max_abs:
            raise Invalid(f"{key}[{i}] must have magnitude at most {max_abs:g}")
    return np.array(value, dtype=np.float64)


def int_rows(data: Any, key: str, rows: int | None, cols: int, max_bits: int) -> list[list[int]]:
    """Read a matrix of JSON integers (1.0 is not an integer here), kept as exact Python integers.

    No fixed-width arithmetic can overflow silently.

    Args:
        data: The submission (the field `key` is read), or the matrix itself.
        key: The field's name.
        rows: The number of rows; None for any.
        cols: The number of columns.
        max_bits: The largest bit length of an entry.

    Returns:
        The rows.

    Raises:
        Invalid: The matrix has the wrong shape, or an entry is not an integer or is too large.
    """

    def integer(item: Any, where: str) -> None:
        exact_integer(item, where, max_bits)

    return _matrix(data[key] if isinstance(data, dict) else data, key, rows, cols, integer,
                   "integers")


def exact_integer(item: Any, where: str, max_bits: int) -> int:
    """Read a JSON integer (1.0 and booleans are not integers here) of at most `max_bits` bits.

    Args:
        item: The value.
        where: The field's name, for the error.
        max_bits: The largest bit length.

    Returns:
        The integer.

    Raises:
        Invalid: Not an integer, or too large (naming the field).
    """
    if isinstance(item, HugeInt):
        raise Invalid(f"{where} is an integer of {item.digits} digits; entries must have "
                      f"magnitude below 2^{max_bits}")
    if not isinstance(item, int) or isinstance(item, bool):
        raise Invalid(f"{where} must be an integer, got {type(item).__name__} {item!r}")
    if item.bit_length() > max_bits:
        raise Invalid(f"{where} must have magnitude below 2^{max_bits} "
                      f"(it has {item.bit_length()} bits)")
    return item


def violations(name: str, found: list[str]) -> None:
    """Raise one error listing every violation of a constraint (the first MAX_LISTED_VIOLATIONS).

    Args:
        name: The constraint.
        found: Its violations, each described.

    Raises:
        Invalid: There is at least one violation.
    """
    if found:
        more = (f" (and {len(found) - MAX_LISTED_VIOLATIONS} more)"
                if len(found) > MAX_LISTED_VIOLATIONS else "")
        raise Invalid(f"{name}: {len(found)} violation(s): "
                      + "; ".join(found[:MAX_LISTED_VIOLATIONS]) + more)


def all_violations(found: dict[str, list[str]]) -> None:
    """Raise one error naming every violated constraint of several kinds, with their violations.

    Args:
        found: Each constraint's violations, by its name.

    Raises:
        Invalid: Any constraint has a violation.
    """
    parts = []
    listed = 0
    for name, items in found.items():
        if not items:
            continue
        room = max(MAX_LISTED_VIOLATIONS - listed, 1)
        more = f" (and {len(items) - room} more)" if len(items) > room else ""
        parts.append(f"{name}: {len(items)} violation(s): " + "; ".join(items[:room]) + more)
        listed += min(len(items), room)
    if parts:
        raise Invalid(" | ".join(parts))


def distinct_rows(points: np.ndarray | list[list[Any]], key: str) -> None:
    """Check that no two rows are equal.

    Args:
        points: The rows.
        key: The field's name, for the error.

    Raises:
        Invalid: Rows repeat (each duplicate named).
    """
    seen: dict[tuple[Any, ...], int] = {}
    duplicates = []
    for i, row in enumerate(points):
        t = tuple(row.tolist() if isinstance(row, np.ndarray) else row)
        if t in seen:
            duplicates.append(f"{key}[{i}] duplicates {key}[{seen[t]}]")
        else:
            seen[t] = i
    violations("distinctness", duplicates)


def size(value: Any) -> str:
    """Write a violation's magnitude for a message, even when it is beyond float64's range.

    Args:
        value: The magnitude (a float, an int, a Fraction).

    Returns:
        It to 3 significant digits.
    """
    try:
        return f"{float(value):.3g}"
    except OverflowError:
        return f"more than {FLOAT_MAX:.3g}"


def as_float(value: Any, what: str) -> float:
    """Round an exact quantity (Fraction, int) once to float64.

    Args:
        value: The quantity.
        what: Its name, for the error.

    Returns:
        The float.

    Raises:
        Invalid: It overflows float64 or is not finite.
    """
    try:
        result = float(value)
    except OverflowError:
        raise Invalid(
            f"{what} overflows float64 (the construction's scale is out of range)") from None
    if not math.isfinite(result):
        raise Invalid(f"{what} is not finite")
    return result


# ------------------------------------------------------------------------------ outcome descriptors
# How far apart two solutions lie, up to the task's symmetries (innolab.novelty.outcome, host side
# only: scipy is imported where it is used, so a sandbox's validator needs numpy alone).

OUTCOME_TIE = 1.0


@dataclass(frozen=True)
class Outcome:
    """How a check's solutions are compared: a descriptor and a symmetry-invariant distance.

    Attributes:
        describe: (submission, the check's parameters) -> descriptor; raises Invalid naming the
            field on a malformed submission (shape and type; the constraints are not checked).
        distance: (descriptor, descriptor) -> distance on 0-100 (0: the same solution up to the
            task's symmetries).
        scale: What the distance measures and what 0 and 100 mean.
        tie: The distance within which two solutions count as the same (a re-derived one).
    """

    describe: Callable[[dict[str, Any], dict[str, Any]], Any]
    distance: Callable[[Any, Any], float]
    scale: str
    tie: float = OUTCOME_TIE


def outcome(reference: str) -> Outcome | None:
    """Find how a check's solutions are compared (a family module of this package).

    Args:
        reference: The check, "module:function".

    Returns:
        The family module's Outcome for that check (its `OUTCOMES` entry), or None if it has none.

    Raises:
        ValueError: The reference names no check.
    """
    resolve(reference)
    module, _, function = reference.partition(":")
    package = __name__.rpartition(".")[0]
    found: dict[str, Outcome] = getattr(
        importlib.import_module(f"{package}.{module}"), "OUTCOMES", {})
    return found.get(function)


def spacing(points: np.ndarray) -> float:
    """Return the mean nearest-neighbour distance of a point set (the unit of point distances).

    Args:
        points: The points, one a row (at least two).

    Returns:
        The mean over the points of the distance to the nearest other point.
    """
    from scipy.spatial.distance import cdist

    d = cdist(points, points)
    np.fill_diagonal(d, np.inf)
    return float(d.min(axis=1).mean())


def matched_rms(a: np.ndarray, b: np.ndarray) -> tuple[float, np.ndarray]:
    """Match two equal-sized sets of rows one to one, minimising the squared distances.

    Args:
        a: The first set (n x d).
        b: The second set (n x d).

    Returns:
        (the root-mean-square distance of matched rows, the row of b matched to each row of a).
    """
    from scipy.optimize import linear_sum_assignment
    from scipy.spatial.distance import cdist

    cost = cdist(a, b, "sqeuclidean")
    rows, cols = linear_sum_assignment(cost)
    return math.sqrt(max(float(cost[rows, cols].mean()), 0.0)), cols


def group_rms(a: np.ndarray, b: np.ndarray, maps: list[np.ndarray], centre: np.ndarray) -> float:
    """Return the least matched RMS distance of a to b over a finite group acting on b's plane.

    Args:
        a: The first set (n x d; columns 0-1 are the plane, the others are left alone).
        b: The second set (n x d).
        maps: The group's 2 x 2 orthogonal matrices (acting on columns 0-1 about `centre`).
        centre: The group's fixed point.

    Returns:
        The least root-mean-square distance of matched rows over the group and all permutations.
    """
    best = math.inf
    for m in maps:
        moved = b.copy()
        moved[:, :2] = (b[:, :2] - centre) @ m.T + centre
        best = min(best, matched_rms(a, moved)[0])
    return best


def rotation(angle: float) -> np.ndarray:
    """Return the 2 x 2 matrix of a rotation by `angle` radians."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s], [s, c]])


def dihedral(order: int, mirror: float = 0.0) -> list[np.ndarray]:
    """Return the dihedral group of a regular `order`-gon centred at 0.

    Args:
        order: The polygon's number of sides (4: the square's 8 symmetries).
        mirror: The angle (radians) of one of its mirror lines through 0 (0: the x axis, a mirror
            line of the axis-aligned square; π/2: the y axis, one of the triangle (0, 0), (1, 0),
            (1/2, √3/2) about its centroid).

    Returns:
        Its `order` rotations and `order` reflections (2 x 2 matrices).
    """
    c, s = math.cos(2 * mirror), math.sin(2 * mirror)
    flip = np.array([[c, s], [s, -c]])
    turns = [rotation(2 * math.pi * k / order) for k in range(order)]
    return turns + [t @ flip for t in turns]


def orthogonal_rms(a: np.ndarray, b: np.ndarray, starts: int = 72, refined: int = 8) -> float:
    """Return the least matched RMS distance of two planar point sets over O(2) and permutations.

    The joint problem (rotation or reflection, and matching) is solved by matching b turned by
    `starts` angles (and mirrored), then refining the best `refined` matchings by alternating an
    orthogonal Procrustes fit (SVD) with a fresh optimal matching until the matching settles.

    Args:
        a: The first set (n x 2), centred.
        b: The second set (n x 2), centred.
        starts: The number of starting angles.
        refined: How many of the best starts are refined.

    Returns:
        The least root-mean-square distance found.
    """
    tried = []
    for m in dihedral(starts):
        rms, cols = matched_rms(a, b @ m.T)
        tried.append((rms, tuple(cols.tolist())))
    best = math.inf
    for rms, cols in sorted(set(tried))[:refined]:
        perm = np.array(cols)
        for _ in range(50):
            u, _, vt = np.linalg.svd(b[perm].T @ a)
            rms, new = matched_rms(a, b @ (u @ vt))
            if np.array_equal(new, perm):
                break
            perm = new
        best = min(best, rms)
    return best


def unit_distance(rms: float, unit: float) -> float:
    """Put a matched RMS distance on 0-100: 100 · rms / unit, capped at 100.

    Args:
        rms: The root-mean-square distance of matched rows.
        unit: The length that counts as 100 (a configuration's neighbour spacing).

    Returns:
        The distance on 0-100.
    """
    if not unit > 0:
        return 0.0 if rms == 0 else 100.0
    return float(min(100.0, 100.0 * rms / unit))


# ---------------------------------------------------------------------------------- hostile inputs
# What `innolab tasks check` feeds every check (a family's HOSTILE): each submission breaks one
# format rule, so every check must reject it with a clear error, never crash, never accept it.

_SLOT = "\x00hostile\x00"


def hostile_variants(key: str, rows: list[Any], fixed_rows: bool = True) -> dict[str, str]:
    """Hostile submissions of a field that holds a list of numbers or of rows of numbers.

    Args:
        key: The field's name.
        rows: A plausible value of the field (its first entry is corrupted in turn).
        fixed_rows: Whether the check requires exactly len(rows) rows (then a missing and an
            extra row are hostile too).

    Returns:
        Each hostile submission's JSON text by its label.
    """

    def corrupt(spelling: str) -> str:
        value = json.loads(json.dumps(rows))
        if isinstance(value[0], list):
            value[0][0] = _SLOT
        else:
            value[0] = _SLOT
        return json.dumps({key: value}).replace(json.dumps(_SLOT), spelling, 1)

    out = {
        "NaN entry": corrupt("NaN"),
        "Infinity entry": corrupt("Infinity"),
        "-Infinity entry": corrupt("-Infinity"),
        "1e999 entry (overflows to infinity)": corrupt("1e999"),
        "integer of 400 digits": corrupt("1" + "0" * 400),
        "string entry": corrupt('"0.5"'),
        "boolean entry": corrupt("true"),
        "null entry": corrupt("null"),
        "nested entry": corrupt("[[0.5]]"),
        "a reported score beside the construction": json.dumps({key: rows, "score": 1e9}),
        "the field missing": json.dumps({}),
        "the field not a list": json.dumps({key: "everything"}),
        "not an object": json.dumps([rows]),
        "nested too deeply": '{"' + key + '": ' + "[" * 100_000 + "]" * 100_000 + "}",
    }
    if fixed_rows:
        out["a row missing"] = json.dumps({key: rows[:-1]})
        out["a row too many"] = json.dumps({key: [*rows, rows[-1]]})
    return out


# ----------------------------------------------------------------------------------------- dispatch


def split_reference(reference: str) -> tuple[str, str]:
    """Split a check's reference "module:function" and check its form.

    Args:
        reference: "module:function".

    Returns:
        (module, function).

    Raises:
        ValueError: Not "module:function" with two identifiers, a private function, or a module
            name this package keeps for itself.
    """
    module, colon, function = str(reference).partition(":")
    if not colon or not module.isidentifier() or not function.isidentifier():
        raise ValueError(f"check {reference!r} must be 'module:function' (two Python names: the "
                         "problem family's module and its check function)")
    if module in RESERVED_MODULES or module.startswith("_"):
        raise ValueError(f"check {reference!r}: {module!r} is not a problem family's module")
    if function.startswith("_"):
        raise ValueError(f"check {reference!r} is not a public check function")
    return module, function


def resolve(reference: str) -> Callable[..., float]:
    """Find the check function named "module:function" in a family module of this package.

    In a sandbox the package holds the core and the task's own family module; on the host
    innolab finds families through its registry (innolab.tasks.families), which hands checks to
    `run_check`.

    Args:
        reference: "module:function".

    Returns:
        The check function.

    Raises:
        ValueError: The reference is malformed, or names no module or no public function here.
    """
    module, function = split_reference(reference)
    package = __name__.rpartition(".")[0]
    try:
        found = getattr(importlib.import_module(f"{package}.{module}"), function)
    except (ImportError, AttributeError):
        raise ValueError(
            f"check {reference!r}: module {module!r} has no function {function!r}") from None
    if not callable(found):
        raise ValueError(f"check {reference!r} is not a public check function")
    return found


def run_check(
    function: Callable[..., float], params: dict[str, Any], data: dict[str, Any]
) -> tuple[list[str], float | None]:
    """Run a check function on a parsed submission and insist on a finite objective.

    Args:
        function: The check function.
        params: The problem's parameters.
        data: The submission.

    Returns:
        (errors, score): no errors and the recomputed objective, or the errors and None.
    """
    try:
        score = function(data, **params)
    except Invalid as error:
        return [str(error)], None
    if not is_real(score) or not math.isfinite(score):
        return [f"the objective is not a finite number ({score!r})"], None
    return [], float(score)


def check(
    reference: str, params: dict[str, Any], data: dict[str, Any]
) -> tuple[list[str], float | None]:
    """Check a submission and recompute its objective.

    Args:
        reference: The check, "module:function".
        params: The problem's parameters.
        data: The submission.

    Returns:
        (errors, score): no errors and the recomputed objective, or the errors and None.
    """
    try:
        function = resolve(reference)
    except ValueError as error:
        return [str(error)], None
    return run_check(function, params, data)


def check_file(reference: str, params: dict[str, Any], path: str | Path,
               max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[list[str], float | None]:
    """Read and check a submission file.

    Args:
        reference: The check, "module:function".
        params: The problem's parameters.
        path: The submission file.
        max_bytes: The size limit.

    Returns:
        (errors, score), as `check`.
    """
    try:
        data = load_submission(path, max_bytes)
    except Invalid as error:
        return [str(error)], None
    return check(reference, params, data)


def main_from_config(config_file: str) -> None:
    """Run the sandbox's validate.py: the check's configuration is in a file beside the package.

    Args:
        config_file: The configuration's file name (task.json).
    """
    config = json.loads((Path(__file__).resolve().parent.parent / config_file)
                        .read_text(encoding="utf-8"))
    main(config["check"], config["params"], config["max_bytes"])


def main(reference: str, params: dict[str, Any], max_bytes: int = DEFAULT_MAX_BYTES) -> None:
    """Run the validator's command line: `python validate.py SUBMISSION.json`.

    It prints a JSON verdict (valid, score, errors).

    Args:
        reference: The check, "module:function".
        params: The problem's parameters.
        max_bytes: The size limit.

    Raises:
        SystemExit: Always: 0 when valid, 1 when not, 2 on a wrong command line.
    """
    if len(sys.argv) != 2:
        print("usage: python validate.py SUBMISSION.json", file=sys.stderr)
        raise SystemExit(2)
    errors, score = check_file(reference, params, sys.argv[1], max_bytes)
    print(json.dumps({"valid": not errors, "score": score, "errors": errors}))
    raise SystemExit(0 if not errors else 1)
