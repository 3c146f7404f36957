"""Dead-code removal: a program as novelty compares it, only the code that can run.

`strip_dead_code` drops the module-level functions, classes, assignments and imports that nothing
executed reaches, and the nested functions and classes that their enclosing function never uses.
Padding a program with unused definitions then leaves what a back end compares unchanged.

Reachability (a fixed point over names):

* roots are the module's top-level statements other than definitions: calls, loops, `if
  __name__ == "__main__":` blocks, `try` blocks, augmented assignments and so on (kept whole;
  docstrings, `pass` and `from __future__` imports stay too, but run nothing); in a program of
  several files (`# file: NAME` lines, the entry last) the `__main__` blocks of the imported
  modules never run and go;
* a definition is reached when a reached piece of code names it: a `Name` (any context), a
  `global`/`nonlocal` declaration, a string constant equal to it (`getattr(module, "f")`,
  `__all__`), or an attribute of a module of the same program (`helper.f`, where the text holds
  `# file: helper.py`); every definition of a reached name is kept;
* a reached definition reaches all the names its statement holds (decorators, defaults, bases,
  annotations, body).

What counts as a definition (droppable when unreached): `def`, `async def` and `class` whose
decorators are all known to have no side effect (`PURE_DECORATORS`: a registering decorator keeps
its function); assignments to plain names whose value calls nothing but `PURE_CALLS` (a call of
unknown effect keeps its assignment); `import`s (not `from __future__`, not `*`). Everything is
kept (the text returned unchanged) when the text does not parse, when it has no root (a library
of definitions: its interface is unknown), or when reached code looks names up at run time
(`eval`, `exec`, `globals`, `locals`, `vars`, `sys.modules`).

The text is kept as written: dropped statements' lines go, with the comment lines directly above
them (not `# file:` markers) and the blank lines after them; everything else stays byte for byte.
The result still runs as the original does, bar the side effects of importing an unused module.
"""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from collections.abc import Iterable, Iterator

from innolab import pyparse

# decorators that return the function (or a wrapper of it) and register nothing, as written or
# with their module (imports resolved: `ft.lru_cache` after `import functools as ft`)
PURE_DECORATORS = frozenset({
    "staticmethod", "classmethod", "property", "abc.abstractmethod", "functools.cache",
    "functools.lru_cache", "functools.wraps", "functools.cached_property",
    "functools.total_ordering", "dataclasses.dataclass", "contextlib.contextmanager",
    "numba.jit", "numba.njit", "numba.vectorize", "typing.overload", "typing.final",
})
# calls that only build, read or compute a value (besides every function of `math`)
PURE_CALLS = frozenset({
    "dict", "list", "set", "tuple", "frozenset", "range", "int", "float", "str", "bool",
    "complex", "bytes", "len", "abs", "min", "max", "sum", "sorted", "reversed", "enumerate",
    "zip", "round", "pow", "divmod", "object", "typing.TypeVar", "collections.namedtuple",
    "collections.defaultdict", "collections.deque", "collections.Counter",
    "collections.OrderedDict", "re.compile", "pathlib.Path", "fractions.Fraction",
    "decimal.Decimal", "time.time", "time.perf_counter", "time.monotonic", "time.process_time",
    "os.getcwd", "os.cpu_count", "os.getenv", "os.environ.get", "os.path.join",
    "os.path.dirname", "os.path.basename", "os.path.abspath", "datetime.datetime.now",
})
PURE_NUMPY_CALLS = frozenset({
    "array", "asarray", "zeros", "ones", "full", "empty", "arange", "linspace", "eye",
    "identity", "sqrt", "exp", "log", "sin", "cos", "tan", "arctan2", "deg2rad", "rad2deg",
    "float64", "int64", "dtype", "zeros_like", "ones_like", "full_like", "stack", "vstack",
    "hstack", "concatenate", "meshgrid", "diag", "abs",
})
DYNAMIC_NAMES = frozenset({"eval", "exec", "globals", "locals", "vars"})
_FILE_MARKER = re.compile(r"^# file: (\S+?)(?:\.py)?\s*$", re.MULTILINE)
_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
# what parsing a text that is not (or too much) Python raises
_UNPARSABLE = (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError, SystemError)
# a line and its end as Python's tokenizer counts lines (not str.splitlines: form feeds and
# Unicode line separators inside a line do not end it)
_LINE = re.compile(r".*?(?:\r\n|\r|\n)|.+$", re.DOTALL)


def strip_dead_code(source: str) -> str:
    """Return a program without the code its execution never reaches (see the module's docstring).

    Args:
        source: The program's text.

    Returns:
        The text with unreached definitions removed; unchanged when it does not parse, has no
        top-level statement that runs, or looks names up at run time.
    """
    if not isinstance(source, str):
        return source
    return _strip(source)


@functools.lru_cache(maxsize=256)
def _strip(source: str) -> str:
    try:
        tree = pyparse.parse(source)
    except _UNPARSABLE:
        return source
    try:
        drops = _Reachability(tree, _local_modules(source), _entry_line(source)).dropped()
    except RecursionError:
        return source
    if not drops:
        return source
    stripped = _remove_lines(source, drops)
    try:
        pyparse.parse(stripped)
    except _UNPARSABLE:
        return source
    return stripped


def _local_modules(source: str) -> frozenset[str]:
    """The module names of the files of a concatenated program (`# file: pkg/helper.py`)."""
    names: set[str] = set()
    for path in _FILE_MARKER.findall(source):
        parts = path.replace("\\", "/").split("/")
        names.add(parts[-1])
        names.add(".".join(parts))
        names.add(parts[0])
    return frozenset(n for n in names if n.isidentifier() or "." in n)


def _entry_line(source: str) -> int:
    """The line of the last `# file:` marker (the entry's, which comes last), or 0."""
    last = 0
    for number, line in enumerate(_LINE.findall(source), start=1):
        if _FILE_MARKER.match(line):
            last = number
    return last


def _is_main_guard(statement: ast.stmt) -> bool:
    """Whether a statement is `if __name__ == "__main__":` (either way round)."""
    if not isinstance(statement, ast.If) or not isinstance(statement.test, ast.Compare):
        return False
    test = statement.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s.id for s in sides if isinstance(s, ast.Name)]
    constants = [s.value for s in sides if isinstance(s, ast.Constant)]
    return names == ["__name__"] and constants == ["__main__"]


def _dotted(node: ast.expr) -> str | None:
    """`a.b.c` for a chain of attributes on a name; None for anything else."""
    if isinstance(node, ast.Call):
        node = node.func
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


class _Reachability:
    """Which statements of a module (and of its reached functions) nothing reaches."""

    def __init__(self, tree: ast.Module, local_modules: frozenset[str], entry_line: int) -> None:
        self.tree = tree
        self.local_modules = local_modules
        self.entry_line = entry_line
        self.module_aliases = self._module_aliases(tree)
        self.local_aliases = {alias for alias, module in self.module_aliases.items()
                              if module in local_modules or module.split(".")[0] in local_modules}
        self.dynamic = False

    @staticmethod
    def _module_aliases(tree: ast.Module) -> dict[str, str]:
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    aliases[bound] = alias.name if alias.asname else alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.ImportFrom) and node.level > 0:
                for alias in node.names:
                    aliases[alias.asname or alias.name] = node.module or alias.name
        return aliases

    def dropped(self) -> list[ast.stmt]:
        """Return the statements to drop (module level and nested); none when all must stay."""
        drops = self._body(self.tree.body, module=True)
        if drops is None:
            return []
        kept = [s for s in self.tree.body if not any(s is d for d in drops)]
        for function in (f for s in kept for f in _walk_functions(s)):
            drops.extend(self._body(function.body, module=False) or [])
        return [] if self.dynamic else drops

    def _body(self, body: list[ast.stmt], module: bool) -> list[ast.stmt] | None:
        """The droppable statements of one body; None when it has no root (nothing in it runs).

        Args:
            body: The statements.
            module: Whether it is the module's body (whose assignments and imports may go too).

        Returns:
            The statements no root reaches and that have their lines to themselves.
        """
        candidates: dict[int, list[str]] = {}
        for index, statement in enumerate(body):
            names = self._defines(statement, module)
            if names is not None:
                candidates[index] = names
        roots = [s for i, s in enumerate(body) if i not in candidates and not _inert(s)]
        if not roots:
            return None
        by_name: dict[str, list[int]] = {}
        for index, names in candidates.items():
            for name in names:
                by_name.setdefault(name, []).append(index)
        reached: set[int] = set()
        pending = [name for s in roots for name in self._references(s, by_name)]
        seen: set[str] = set()
        while pending:
            name = pending.pop()
            if name in seen:
                continue
            seen.add(name)
            for index in by_name.get(name, []):
                if index not in reached:
                    reached.add(index)
                    pending.extend(self._references(body[index], by_name))
        return [body[i] for i in candidates if i not in reached and _alone(body, i)]

    def _defines(self, statement: ast.stmt, module: bool) -> list[str] | None:
        """The names a droppable definition binds; None when the statement is a root."""
        if module and statement.lineno < self.entry_line and _is_main_guard(statement):
            return []  # an imported module's `__main__` block: it never runs
        if isinstance(statement, _Definition):
            if all(self._pure_decorator(d) for d in statement.decorator_list):
                return [statement.name]
            return None
        if not module:
            return None
        if isinstance(statement, ast.Import | ast.ImportFrom):
            if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
                return None
            if any(alias.name == "*" for alias in statement.names):
                return None
            return [alias.asname or alias.name.split(".")[0] for alias in statement.names]
        if isinstance(statement, ast.Assign | ast.AnnAssign):
            targets = statement.targets if isinstance(statement, ast.Assign) \
                else [statement.target]
            names = [n for t in targets for n in _target_names(t)]
            if any(n is None for n in names):
                return None
            if statement.value is not None and not self._pure(statement.value):
                return None
            return [n for n in names if n is not None]
        return None

    def _resolve(self, node: ast.expr) -> str | None:
        """The dotted name an expression (or a call's callee) stands for, imports resolved.

        `np.zeros` after `import numpy as np` is `numpy.zeros`; `memo` after `from functools import
        lru_cache as memo` is `functools.lru_cache`; None for anything but names and attributes.
        """
        name = _dotted(node)
        if name is None:
            return None
        head, dot, rest = name.partition(".")
        return self.module_aliases.get(head, head) + dot + rest

    def _pure_decorator(self, decorator: ast.expr) -> bool:
        return self._resolve(decorator) in PURE_DECORATORS

    def _pure(self, value: ast.expr) -> bool:
        """Whether evaluating an expression calls nothing of unknown effect."""
        for node in ast.walk(value):
            if isinstance(node, ast.Await | ast.Yield | ast.YieldFrom | ast.NamedExpr):
                return False
            if isinstance(node, ast.Call) and not self._pure_call(node):
                return False
        return True

    def _pure_call(self, call: ast.Call) -> bool:
        name = self._resolve(call.func)
        if name is None:
            return False
        module, _, attr = name.rpartition(".")
        return name in PURE_CALLS or module == "math" or (
            module == "numpy" and attr in PURE_NUMPY_CALLS)

    def _references(self, statement: ast.stmt, defined: dict[str, list[int]]) -> Iterable[str]:
        """Every name a statement may look up, among those defined in its body and beyond."""
        names: set[str] = set()
        for node in ast.walk(statement):
            if isinstance(node, ast.Name):
                names.add(node.id)
                if node.id in DYNAMIC_NAMES:
                    self.dynamic = True
            elif isinstance(node, ast.Global | ast.Nonlocal):
                names.update(node.names)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and node.value in defined:
                names.add(node.value)
            elif isinstance(node, ast.Attribute):
                dotted = _dotted(node)
                if dotted is None:
                    continue
                head = dotted.split(".")[0]
                if dotted == "sys.modules" and self.module_aliases.get(head) == "sys":
                    self.dynamic = True
                if head in self.local_aliases:
                    names.update(dotted.split(".")[1:])
        return names


def _walk_functions(statement: ast.stmt) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions defined in a statement (itself, methods, functions in blocks, nested)."""
    for node in ast.walk(statement):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _target_names(target: ast.expr) -> list[str | None]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [n for element in target.elts for n in _target_names(element)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return [None]


def _inert(statement: ast.stmt) -> bool:
    """Whether a statement that stays runs nothing (a constant, `pass`, `from __future__`)."""
    if isinstance(statement, ast.Pass):
        return True
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
        return True
    return isinstance(statement, ast.ImportFrom) and statement.module == "__future__"


def _first_line(statement: ast.stmt) -> int:
    decorators = getattr(statement, "decorator_list", [])
    return min([statement.lineno, *(d.lineno for d in decorators)])


def _alone(body: list[ast.stmt], index: int) -> bool:
    """Whether a statement has its lines to itself (no `a = 1; b = 2` neighbour)."""
    statement = body[index]
    start, end = _first_line(statement), statement.end_lineno or statement.lineno
    before = body[index - 1] if index > 0 else None
    after = body[index + 1] if index + 1 < len(body) else None
    if before is not None and (before.end_lineno or before.lineno) >= start:
        return False
    return not (after is not None and _first_line(after) <= end)


def _comment_lines(source: str) -> set[int]:
    """The (0-based) lines that hold a comment and nothing else, by Python's tokenizer."""
    found: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(source, newline=None).readline):
            if token.type == tokenize.COMMENT and not token.line[:token.start[1]].strip():
                found.add(token.start[0] - 1)
    except (tokenize.TokenError, SyntaxError):
        return set()
    return found


def _remove_lines(source: str, drops: list[ast.stmt]) -> str:
    """The text without the lines of the dropped statements (see the module's docstring)."""
    lines = _LINE.findall(source)
    comments = _comment_lines(source)
    gone = [False] * len(lines)
    for statement in drops:
        start = _first_line(statement) - 1
        end = (statement.end_lineno or statement.lineno) - 1
        for i in range(start, end + 1):
            gone[i] = True
        above = start - 1
        while above >= 0 and above in comments \
                and not _FILE_MARKER.match(lines[above].strip()) and not gone[above]:
            gone[above] = True
            above -= 1
        below = end + 1
        while below < len(lines) and not lines[below].strip():
            gone[below] = True
            below += 1
    return "".join(line for line, drop in zip(lines, gone, strict=True) if not drop)
