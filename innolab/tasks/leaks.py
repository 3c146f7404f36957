r"""The leak scan: no leaderboard number, V*, bound or known solution's score in what agents see.

A task's *hidden numbers* are V* (as of today and as of the paper's date), every ledger entry
(records and proven bounds, with the parts of a sum), the reproduced V*, the paper's V*, the
numbers its data source publishes about its instances (job-shop bounds) and every known solution's
recorded scores. A solution whose recorded score cannot be read is an error (the scan
would otherwise pass blind).

What is scanned: every file that enters a sandbox (`Task.visible_files`, the description among
them) and, where a run starts, the rest of what the agent reads (the scaffold's prompt texts, the
task's workspace rules, the prior solution's code: see `innolab.gym.agent_view`).

How a number is recognised: every number written in a text is read as a decimal, whichever way it
is spelled — plain (`19481`, `2.6359830849176076`), with thousands separators (`19,481`, `19_481`,
`19'481`, thin or no-break spaces), with a decimal comma (`2,636`), in scientific notation
(`1.9481e4`, `1.9481E+04`, `1.9481 × 10^4`, `1.9481·10⁴`, `1.9481 \times 10^{4}`, `1.9481*10**4`),
negative or not, alone or glued to letters (`19481ms`, `2.636x`, `19481th`, `v19481`). It leaks a
hidden number `v` when it equals `v` rounded (half up or half even) or cut to the written number's
own last digit: `2.636`, `2.635`, `2.6359830849`, `1.948e4` and the full 17 significant digits of
repr all spell V* = 2.6359830849176076. `v` is taken both as its shortest repr and as the exact
binary value (what `f"{v:.20f}"` prints).

The minimum: a written number must carry at least MIN_SIGNIFICANT_DIGITS = 3 significant digits
(leading zeros not counted; trailing zeros after a decimal point not counted either, since `2.000`
says no more than `2`; an integer's trailing zeros do count, `2005` is four digits). A two-digit
spelling (0.5, 2.6, 22) pins a value only to a few per cent, no closer than a task's own statement
does, and such numbers fill every problem statement (n = 26, a 0.5 margin, 22 dimensions), so
flagging them would flag every task; from three digits on, a spelling pins V* to a fraction of a
per cent, and no built-in task, scaffold prompt or shipped prior holds one by chance (the tests
check all of them). The key names in HIDDEN_KEYS are searched too.
"""

from __future__ import annotations

import contextlib
import io
import re
import zipfile
from dataclasses import dataclass
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, ROUND_HALF_UP, Context, Decimal, InvalidOperation
from pathlib import Path

import numpy as np

from innolab.tasks.frontier import PAPER_DATE
from innolab.tasks.model import Task, TaskError

HIDDEN_KEYS = ("v_star", "leaderboard", "upper_bound", "lower_bound", "best_known")
# a hidden sequence (test labels) leaks when this many of its values appear in a row, in order: by
# chance, 10 classes give one such run in 10^32 places
SEQUENCE_WINDOW = 32
MIN_SIGNIFICANT_DIGITS = 3
ROUNDINGS = (ROUND_HALF_UP, ROUND_HALF_EVEN, ROUND_DOWN)  # rounded either way, or cut
# enough for a float's exact binary expansion, quantized to any written digit
_EXACT = Context(prec=80)

# thousands: comma, underscore, apostrophe, thin, narrow and no-break space
_SEPARATORS = ",_'\u2009\u202f\u00a0"
_GROUPED = rf"\d{{1,3}}(?:[{_SEPARATORS}]\d{{3}})+"
# A number may be glued to letters (19481ms, 2.636x, 19481th, v19481), but not to more digits or a
# separated group
_BEFORE, _AFTER = r"(?<![\d.,])(?<!\d[_'])", r"(?![\d_]|[.,]\d)"
_EXPONENT = r"(?:[eE][-+]?\d+)?"
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻", "0123456789+-")
_TEN_TO = (r"\s*(?:×|x|\*|·|\\times|\\cdot)\s*10\s*"  # 10^4, 10**4, 10^{4} or 10⁴
           r"(?:(?:\^|\*\*)\s*\{?\s*([-+−]?\d+)\s*\}?|([⁺⁻]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+))")
NUMBER_PATTERNS = (
    # 19481, 2.636, 1.9481e4, 19481ms
    re.compile(rf"(?<![\d.])(?<!\d[_'])-?\d+(?:\.\d+)?{_EXPONENT}(?![\d_]|\.\d)"),
    # 19,481 · 19_481 · 1,234,567.5
    re.compile(rf"{_BEFORE}-?{_GROUPED}(?:\.\d+)?{_EXPONENT}{_AFTER}"),
    re.compile(rf"{_BEFORE}-?\d+,\d+{_EXPONENT}{_AFTER}"),  # a decimal comma: 2,636
    re.compile(rf"{_BEFORE}(-?\d+(?:\.\d+)?){_TEN_TO}"),  # 1.9481 × 10^4, 1.9481 \times 10^{4}
)
# characters without one of which a pattern cannot match (a text of none is not searched with it)
_NEEDS = (None, _SEPARATORS, ",", "×x*·\\")


class LeakError(TaskError):
    """What the agent would see spells a hidden number; the message names each file and value."""


@dataclass(frozen=True)
class Leak:
    """One hidden number or key name found in one file.

    Attributes:
        file: The file's name.
        found: The spelling found in the file.
        source: Which hidden number it spells, e.g. "v_star", "solution ils-slsqp score".
    """

    file: str
    found: str
    source: str

    def __str__(self) -> str:
        """Return the leak as "file: 'spelling' (source)"."""
        return f"{self.file}: {self.found!r} ({self.source})"


def significant_digits(spelling: str) -> int:
    """Count the significant digits of a written number's first reading, as written.

    Leading zeros never count; trailing zeros count in an integer only.

    Args:
        spelling: A written number.

    Returns:
        The number of significant digits.

    Raises:
        ValueError: The spelling is not a number.
    """
    found = readings(spelling)
    if not found:
        raise ValueError(f"significant_digits: {spelling!r} is not a number")
    return found[0][1]


_PLAIN = re.compile(rf"-?\d+(?:\.\d+)?{_EXPONENT}")
_TEN_TO_FORM = re.compile(rf"(-?\d+(?:\.\d+)?){_TEN_TO}")
_GROUPED_FORM = re.compile(rf"-?{_GROUPED}(?:\.\d+)?{_EXPONENT}")
_SEPARATOR = re.compile(f"[{_SEPARATORS}]")


def _reading(text: str, plain: bool = False) -> tuple[Decimal, int] | None:
    """A plain decimal spelling (`-12.50e3`) → its value and significant digits as written.

    `plain`: the caller has matched it already.
    """
    if not plain and not _PLAIN.fullmatch(text):
        return None
    value = Decimal(text)
    whole, _, fraction = text.partition("e")[0].partition("E")[0].lstrip("-").partition(".")
    # trailing zeros after the point say nothing (2.000 is 2); an integer part's do (2000.0)
    return value, len((whole + fraction.rstrip("0")).lstrip("0"))


def readings(spelling: str) -> list[tuple[Decimal, int]]:
    """Read what a written number can stand for.

    Thousands separators are dropped, a single comma is also read as a decimal comma (`2,636`;
    `19,481` is read both ways), and `× 10^k` is read as an exponent.

    Args:
        spelling: A written number.

    Returns:
        Each reading's value with its significant digits as written; empty when the text is not
        a number.
    """
    text = spelling.strip().replace("−", "-")
    if _PLAIN.fullmatch(text):  # most numbers: one reading, as written
        return [_reading(text, plain=True)]  # type: ignore[list-item]
    ten = _TEN_TO_FORM.fullmatch(text)
    if ten:
        power = ten.group(2) or ten.group(3).translate(_SUPERSCRIPTS)
        text = f"{ten.group(1)}e{power.replace('−', '-')}"
    forms = [text]
    if _GROUPED_FORM.fullmatch(text):
        forms = [_SEPARATOR.sub("", text)]
    if text.count(",") == 1 and "." not in text:
        forms.append(text.replace(",", "."))
    return [r for r in map(_reading, forms) if r is not None]


def numbers_in(text: str) -> dict[str, list[tuple[Decimal, int]]]:
    """Find every number written in a text.

    Args:
        text: Any text.

    Returns:
        Each spelling found, with each of its readings (see `readings`).
    """
    found: dict[str, list[tuple[Decimal, int]]] = {}
    for pattern, needs in zip(NUMBER_PATTERNS, _NEEDS, strict=True):
        if needs is not None and not any(character in text for character in needs):
            continue
        for match in pattern.finditer(text):
            if match.group(0) not in found and (read := readings(match.group(0))):
                found[match.group(0)] = read
    return found


def _rounded(hidden: float, exponent: int) -> set[Decimal]:
    """|hidden| rounded (half up, half even) or cut to the digit 10**exponent.

    Returns:
        The roundings, both from its repr and from its exact binary value; empty when that digit
        is finer than any rounding of a float can be written.
    """
    quantum = Decimal((0, (1,), exponent))
    out = set()
    for base in (Decimal(repr(float(hidden))), Decimal(float(hidden))):
        for rounding in ROUNDINGS:
            try:
                out.add(abs(base).quantize(quantum, rounding=rounding, context=_EXACT))
            except InvalidOperation:
                continue
    return out


def spells(written: Decimal, hidden: float) -> bool:
    """Test whether a written number spells a hidden value.

    Args:
        written: The written number's value, with its written precision.
        hidden: The hidden value.

    Returns:
        True when `written` equals `hidden` rounded or cut to the written number's last digit.
    """
    return abs(written) in _rounded(hidden, int(written.as_tuple().exponent))


class _Index:
    """Hidden numbers by their roundings at each precision met.

    Built on demand: a large data file costs one lookup per number.
    """

    def __init__(self, numbers: dict[str, float]) -> None:
        self.numbers, self.by_exponent = numbers, {}

    def source(self, written: Decimal) -> str | None:
        exponent = int(written.as_tuple().exponent)
        if exponent not in self.by_exponent:
            table: dict[Decimal, str] = {}
            for where, hidden in self.numbers.items():
                for value in _rounded(hidden, exponent):
                    table.setdefault(value, where)
            self.by_exponent[exponent] = table
        return self.by_exponent[exponent].get(abs(written))


def spellings(value: float) -> set[str]:
    """List common spellings of a hidden number (a sample of what the scan recognises).

    For reports and tests: repr, the integer, thousands separators, scientific notation, and every
    rounding to 3–17 significant digits or decimals that keeps at least MIN_SIGNIFICANT_DIGITS.

    Args:
        value: The hidden number.

    Returns:
        The spellings.
    """
    forms = {repr(value), str(value)}
    if float(value).is_integer():
        forms |= {str(int(value)), f"{int(value):,}", f"{int(value):_}"}
    for digits in range(MIN_SIGNIFICANT_DIGITS, 18):
        forms |= {f"{value:.{digits}g}", f"{value:.{digits}f}", f"{value:.{digits - 1}e}",
                  f"{value:.{digits - 1}E}"}
    # 1.9481e+04 → 1.9481e4
    forms |= {re.sub(r"e\+?(-?)0*(\d)", r"e\1\2", f) for f in forms if "e" in f}
    return {f for f in forms if significant_digits(f) >= MIN_SIGNIFICANT_DIGITS}


def hidden_numbers(task: Task) -> dict[str, float]:
    """Collect every number the agent must not see.

    Args:
        task: The task.

    Returns:
        Each hidden number by where it comes from (e.g. "v_star", "ledger lower_bound 7 (White,
        2023)").

    Raises:
        TaskError: A known solution's recorded score cannot be read (naming its score.json).
    """
    from innolab.tasks.solutions import solutions

    spec = task.spec
    found: dict[str, float] = {"v_star": task.v_star}
    with contextlib.suppress(TaskError):  # a user task's ledger may start after the paper
        found[f"v_star as of the paper's date ({PAPER_DATE})"] = task.v_star_as_of(PAPER_DATE).value
    for i, entry in enumerate(spec.v_star.entries):
        where = f"ledger {entry.kind} {i} ({entry.holder}, {entry.date_text})"
        found[where] = entry.value
        for part, value in (entry.parts or {}).items():
            found[f"{where} part {part}"] = value
    for name in ("v_star_reproduced", "paper_v_star"):
        if getattr(spec, name) is not None:
            found[name] = getattr(spec, name)
    for where, value in task.problem_data.published_numbers.items():
        found[f"data {where}"] = value
    for solution in solutions(task):
        try:
            recorded = solution.recorded
        except TaskError as error:
            raise TaskError(
                f"leak scan of {task.id}: the recorded score of solution {solution.name} cannot be "
                f"read, so it cannot be kept out of what the agent sees: {error}") from None
        found[f"solution {solution.name} score"] = recorded.score
        found[f"solution {solution.name} quick score"] = recorded.quick_score
    return found


def scan_files(
    files: dict[str, bytes] | dict[str, str], numbers: dict[str, float]
) -> list[Leak]:
    """Find leaks in a set of files: hidden numbers in any spelling, and hidden key names.

    Args:
        files: Each file's content by its name.
        numbers: The hidden numbers by where they come from (see `hidden_numbers`).

    Returns:
        Each leak once, file by file in name order.
    """
    leaks, index = [], _Index(numbers)
    for name, content in sorted(files.items()):
        if name.endswith((".npy", ".npz")):  # binary arrays: their numbers, each written out
            text = " ".join(map(repr, _values(name, content).tolist()))
        else:
            text = (content.decode("utf-8", errors="replace") if isinstance(content, bytes)
                    else content)
        spelled = []
        for spelling, read in numbers_in(text).items():
            source = next((found for value, digits in read if digits >= MIN_SIGNIFICANT_DIGITS
                           if (found := index.source(value)) is not None), None)
            if source is not None:
                spelled.append(Leak(name, spelling, source))
        leaks += sorted(spelled, key=lambda leak: leak.found)  # in the order of their spellings
        lowered = text.lower()
        leaks += [Leak(name, key, "hidden key name") for key in HIDDEN_KEYS if key in lowered]
    return list(dict.fromkeys(leaks))


def _values(name: str, content: bytes | str) -> np.ndarray:
    """Every number a file holds, in order: a NumPy file's arrays (flattened), else its text's."""
    raw = content.encode() if isinstance(content, str) else content
    if name.endswith((".npy", ".npz")):
        try:
            loaded = np.load(io.BytesIO(raw), allow_pickle=False)
            arrays = [loaded[k] for k in loaded.files] if isinstance(loaded, np.lib.npyio.NpzFile) \
                else [loaded]
            numeric = [_array_numbers(a) for a in arrays if a.dtype.kind in "biufUS"]
            return np.concatenate(numeric) if numeric else np.zeros(0)
        except (ValueError, OSError, zipfile.BadZipFile):
            pass  # not readable as NumPy data: read as text below
    text = raw.decode("utf-8", errors="replace")
    found = re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text)
    return np.array([float(v) for v in found], dtype=np.float64)


_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _array_numbers(array: np.ndarray) -> np.ndarray:
    """A NumPy array's numbers in order: its values, or those its strings spell (`astype(str)`)."""
    if array.dtype.kind in "US":
        text = " ".join(str(v.decode("utf-8", "replace") if isinstance(v, bytes) else v)
                        for v in array.ravel().tolist())
        return np.array([float(v) for v in _NUMBER.findall(text)], dtype=np.float64)
    return array.ravel().astype(np.float64)


def _one_hot(name: str, content: bytes | str) -> list[np.ndarray]:
    """The class of each row of a NumPy file's one-hot arrays (0/1, one 1 per row)."""
    if not name.endswith((".npy", ".npz")) or isinstance(content, str):
        return []
    try:
        loaded = np.load(io.BytesIO(content), allow_pickle=False)
        arrays = [loaded[k] for k in loaded.files] if isinstance(loaded, np.lib.npyio.NpzFile) \
            else [loaded]
    except (ValueError, OSError, zipfile.BadZipFile):
        return []
    found = []
    for array in arrays:
        if (array.ndim == 2 and array.shape[1] >= 2 and array.dtype.kind in "biuf" and array.size
                and np.isin(array, (0, 1)).all() and (array.sum(axis=1) == 1).all()):
            found.append(array.argmax(axis=1).astype(np.float64))
    return found


def _readings(name: str, content: bytes | str, values: np.ndarray,
              digits: bool) -> list[np.ndarray]:
    """The sequences a file may hold hidden values in, each read in order.

    Its numbers; every second and third of them (rows [id, label], an id->label map, a CSV of
    id,label: the ids' own numbers between the labels); a one-hot array's classes; and, for
    single-digit classes, the digits of a long run of digits written as one number.
    """
    found = [values] + [values[offset::stride] for stride in (2, 3) for offset in range(stride)]
    found += _one_hot(name, content)
    if digits and not name.endswith((".npy", ".npz")):
        raw = content.decode("utf-8", "replace") if isinstance(content, bytes) else content
        found += [np.array([float(d) for d in run], dtype=np.float64)
                  for run in re.findall(rf"\d{{{SEQUENCE_WINDOW},}}", raw)]
    return found


def _keyed(values: np.ndarray, hidden: np.ndarray, width: int) -> bool:
    """Whether pairs (index, value) give `width` hidden values at consecutive own indices.

    Rows [id, label] or an id->label map in any order, the ids numbered 0, 1, ... (their number
    read from the id).
    """
    for offset in (0, 1):
        keys, labels = values[offset::2], values[offset + 1::2]
        keys = keys[:len(labels)]
        whole = (keys == np.floor(keys)) & (keys >= 0) & (keys < len(hidden))
        if whole.sum() < width:
            continue
        matched = np.zeros(len(hidden), dtype=bool)
        indices = keys[whole].astype(np.int64)
        matched[indices] = hidden[indices] == labels[whole]
        if (np.convolve(matched, np.ones(width, dtype=int), "valid") == width).any():
            return True
    return False


def scan_sequences(files: dict[str, bytes] | dict[str, str],
                   sequences: dict[str, list[float]], window: int = SEQUENCE_WINDOW) -> list[Leak]:
    """Find hidden sequences (a task's test labels, in order) in files.

    A file leaks a sequence when `window` consecutive values of it appear in a row among the
    numbers the file holds (a NumPy file's arrays, numeric or strings, or the numbers written in
    a text), however they are spelled (7, 7.0, 7e0); or among every second or third of them
    (rows [id, label], an id->label map, a CSV of id,label); or at their own indices in pairs
    (index, value) in any order; or as the classes of a one-hot array; or, for single-digit
    values, as the digits of one long number.

    Args:
        files: Each file's content by its name.
        sequences: The hidden sequences by name.
        window: How many values in a row leak a sequence (a shorter sequence: all of it).

    Returns:
        One leak per file and sequence found.
    """
    leaks = []
    for label, sequence in sequences.items():
        hidden = np.asarray(sequence, dtype=np.float64)
        width = min(window, len(hidden))
        if width == 0:
            continue
        shingles = {hidden[i:i + width].tobytes() for i in range(len(hidden) - width + 1)}
        allowed = list(np.unique(hidden).tolist())
        digits = bool(np.isin(hidden, np.arange(10)).all())
        for name, content in sorted(files.items()):
            values = _values(name, content)
            for reading in _readings(name, content, values, digits):
                if len(reading) < width:
                    continue
                inside = np.isin(reading, allowed)
                runs = np.convolve(inside, np.ones(width, dtype=int), "valid") == width
                if any(reading[i:i + width].tobytes() in shingles for i in np.flatnonzero(runs)):
                    leaks.append(Leak(name, f"{width} values of the {label} in a row", label))
                    break
            else:
                if len(values) >= 2 * width and _keyed(values, hidden, width):
                    leaks.append(Leak(name, f"{width} values of the {label} at their ids", label))
    return leaks


def hidden_sequences(task: Task) -> dict[str, list[float]]:
    """The sequences the agent must not see (a prediction task's test labels), by name."""
    return dict(task.problem_data.hidden_sequences)


def scan(task: Task, files: dict[str, bytes] | dict[str, str] | None = None) -> list[Leak]:
    """Find leaks of a task's hidden numbers and sequences in what the agent sees.

    Args:
        task: The task.
        files: Each file's content by its name; None scans the task's visible part (everything
            that enters a sandbox, its data files too).

    Returns:
        The leaks found (see `scan_files` and `scan_sequences`).

    Raises:
        TaskError: A known solution's recorded score cannot be read.
    """
    files = {**task.visible_files(), **task.data_files()} if files is None else files
    return scan_files(files, hidden_numbers(task)) + scan_sequences(files, hidden_sequences(task))


def refuse(task: Task, files: dict[str, bytes] | dict[str, str]) -> None:
    """Refuse files that spell a hidden number of the task.

    Args:
        task: The task.
        files: Each file's content by its name.

    Raises:
        LeakError: Any of the files spells a hidden number (naming each file and spelling).
        TaskError: A known solution's recorded score cannot be read.
    """
    found = scan(task, files)
    if found:
        shown = "; ".join(str(leak) for leak in found[:10]) + (
            f"; and {len(found) - 10} more" if len(found) > 10 else "")
        raise LeakError(
            f"task {task.id}: what the agent would see spells hidden numbers (V*, the leaderboard, "
            f"bounds or known solutions' scores): {shown}. Remove them (a prior solution's "
            "docstring, the description) before the run starts.")


def shipped_priors(task_id: str, folder: Path | None = None) -> dict[str, bytes]:
    """Read the prior solutions shipped for a task (data/sweeps/priors/<task id>-<name>.py).

    Args:
        task_id: The task's id.
        folder: The folder of shipped priors; None takes innolab's data/sweeps/priors.

    Returns:
        Each prior's content by "priors/<file name>"; empty when the folder does not exist.
    """
    from innolab.paths import data_dir

    folder = folder or data_dir() / "sweeps" / "priors"
    if not folder.is_dir():
        return {}
    pattern = re.compile(rf"{re.escape(task_id)}-[\w-]+\.py")
    return {f"priors/{p.name}": p.read_bytes() for p in sorted(folder.iterdir())
            if p.is_file() and pattern.fullmatch(p.name)}
