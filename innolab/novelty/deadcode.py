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

Code that execution never reaches is decided, not guessed by name:

* a branch a constant decides: `if False:` / `if 0:` / `if not True:` / `while False:` (and
  comparisons and `and`/`or` of constants), with a module-level name bound once to a literal and
  never rebound anywhere (`PAD = False ... if PAD:`) counting as that literal: the dead branch goes
  (a body left empty holds `pass`) and what only it names is not reached;
* statements after a `return`, `raise`, `continue` or `break` in the same block.

Where the program was run (at scoring, innolab.gym.reproduce re-runs it with line coverage),
`keep_executed` first drops every statement none of whose lines ran (functions whose bodies never
ran among them), then `strip_dead_code` applies the static rules on what is left: the kept code is
what ran *and* what static reachability keeps, so a coverage record can only remove more.
`DeadCodeRule` names which of the two was used.

The text is kept as written: dropped statements' lines go, with the comment lines directly above
them (not `# file:` markers) and the blank lines after them; everything else stays byte for byte.
The result still runs as the original does, bar the side effects of importing an unused module.
"""

from __future__ import annotations

import ast
import functools
import io
import operator
import re
import tokenize
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any, Literal

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
# statements after which nothing in the same block runs
_TERMINATORS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
# which code a novelty back end compared: what ran in the re-run, or what static reachability keeps
DeadCodeRule = Literal["executed", "static"]
DEAD_CODE_RULES: dict[str, str] = {
    "executed": "the lines that ran when the program was re-run (line coverage), then static "
                "reachability",
    "static": "static reachability (unreached definitions, branches a constant decides, code "
              "after a return)",
}
_UNKNOWN = object()  # an expression whose value is not known before the program runs


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
        dead = _Dead(tree, _LINE.findall(source))
        reach = _Reachability(tree, _local_modules(source), _entry_line(source), dead.statements,
                              dead.quiet)
        drops = reach.dropped()
        if reach.dynamic or reach.rootless:
            return source
        cut = _Cut.plan(tree, source, [*drops, *dead.outermost(tree)], dead)
    except RecursionError:
        return source
    return cut.apply(source) if cut else source


def keep_executed(source: str, executed: Collection[int]) -> str | None:
    """Return a program without the statements none of whose lines ran (line coverage).

    A function or method whose body never ran goes (its `def` line runs when it is defined); a
    class goes when its statement never ran; any other statement goes when none of its lines
    ran, and a block left empty holds `pass`. Docstrings, `pass`, `global`/`nonlocal` and
    `from __future__` imports stay. Apply `strip_dead_code` to the result as well: what a novelty
    back end compares is what ran and what static reachability keeps.

    Args:
        source: The program's text, as it ran.
        executed: The (1-based) lines of the text that ran.

    Returns:
        The text without what never ran; None when it does not parse (nothing to keep by lines)
        or when nothing of it ran (a coverage record that cannot be right).
    """
    ran = frozenset(executed)
    try:
        tree = pyparse.parse(source)
    except _UNPARSABLE:
        return None
    if not ran or not any(_lines(s) & ran for s in tree.body):
        return None
    try:
        removed: list[ast.stmt] = []
        pure = _Reachability(tree, _local_modules(source), _entry_line(source))._pure
        _unexecuted(tree.body, ran, removed, pure)
        cut = _Cut.plan(tree, source, removed)
    except RecursionError:
        return None
    if cut is None:
        return source
    text = cut.apply(source)
    return text if text != source or not removed else None


# decorators after which a function's body still runs as Python a line tracer sees
TRACEABLE_DECORATORS = frozenset({
    "staticmethod", "classmethod", "property", "setter", "getter", "deleter", "cache",
    "lru_cache", "cached_property", "wraps", "abstractmethod", "contextmanager", "dataclass",
    "overload", "final", "total_ordering", "singledispatch", "register",
})


def _decorator_name(decorator: ast.expr) -> str:
    """A decorator's last name (`lru_cache` for `functools.lru_cache(maxsize=8)`)."""
    node = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _lines(statement: ast.stmt) -> frozenset[int]:
    return frozenset(range(_first_line(statement), (statement.end_lineno or statement.lineno) + 1))


def _unexecuted(body: list[ast.stmt], ran: frozenset[int], removed: list[ast.stmt],
                pure: Callable[[ast.expr], bool]) -> None:
    """Collect the statements of a body (and of the blocks of those that ran) that never ran.

    An `if` or `while` none of whose blocks ran goes whole where its test has no side effect
    (evaluating it was all it did).
    """
    for statement in body:
        if _inert(statement) or isinstance(statement, ast.Global | ast.Nonlocal):
            continue
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            if any(_decorator_name(d) not in TRACEABLE_DECORATORS
                   for d in statement.decorator_list):
                continue  # its body may run where no tracer sees it (a JIT): static rule only
            inside = frozenset(line for s in statement.body for line in _lines(s))
            if not inside & ran:  # never called (or never defined)
                removed.append(statement)
                continue
        elif not _lines(statement) & ran or _ran_empty(statement, ran, pure):
            removed.append(statement)
            continue
        for block in _blocks(statement):
            _unexecuted(block, ran, removed, pure)


def _ran_empty(statement: ast.stmt, ran: frozenset[int],
               pure: Callable[[ast.expr], bool]) -> bool:
    """Whether an `if` or `while` ran only its test (pure), none of its blocks."""
    return isinstance(statement, ast.If | ast.While) and pure(statement.test) and not any(
        _lines(s) & ran for block in _blocks(statement) for s in block)


def _blocks(statement: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement lists a compound statement holds (bodies, else, finally, handlers, cases)."""
    for name in ("body", "orelse", "finalbody"):
        block = getattr(statement, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block
    for handler in getattr(statement, "handlers", []) or []:
        yield handler.body
    for case in getattr(statement, "cases", []) or []:
        yield case.body


class _Dead:
    """The statements no execution reaches, decided by the program's constants and its jumps.

    Attributes:
        lines: The text's lines.
        constants: Module-level names bound once to a literal and never rebound, with their value.
        statements: The ids of the statements that never run.
        unwrap: `if` statements a constant decides whose live block takes their place, by id:
            ("body", block indentation) for an always-true test (the `else` part goes too),
            ("else", ...) for an always-false one with a plain `else`, ("elif", 0) for an
            always-false one followed by `elif` (which becomes the `if`).
        else_cut: Always-true `if` statements whose `else` / `elif` part goes but whose header
            stays (their body cannot be dedented line by line).
        quiet: The ids of `if` statements whose test leaves the text (it names nothing).
    """

    def __init__(self, tree: ast.Module, lines: list[str]) -> None:
        self.lines = lines
        self.constants = _constant_names(tree)
        self.statements: set[int] = set()
        self.unwrap: dict[int, tuple[str, int]] = {}
        self.else_cut: set[int] = set()
        self.quiet: set[int] = set()
        self.promoted: set[int] = set()  # `elif`s whose line becomes an `if` (the one above goes)
        # the enclosing function of what is visited (None inside a class body)
        self._functions: list[ast.FunctionDef | ast.AsyncFunctionDef | None] = []
        self._visit(tree.body)

    def outermost(self, tree: ast.Module) -> list[ast.stmt]:
        """The dead statements that are not inside another dead statement."""
        found: list[ast.stmt] = []

        def visit(body: list[ast.stmt]) -> None:
            for statement in body:
                if id(statement) in self.statements:
                    found.append(statement)
                else:
                    for block in _blocks(statement):
                        visit(block)
        visit(tree.body)
        return found

    def _kill(self, statements: Iterable[ast.stmt]) -> None:
        for statement in statements:
            self.statements.add(id(statement))

    def _keeps(self, statements: list[ast.stmt]) -> bool:
        """Whether code that never runs still shapes its function, so that it must stay.

        Inside a function, a `yield` (or `await`) makes it a generator (a coroutine), a `global`
        or `nonlocal` decides where its names live, and a name bound there is local to the whole
        function wherever else it is read: dropping such code would change what the function does.
        """
        function = self._functions[-1] if self._functions else None
        if function is None:  # module or class scope: a name bound or not fails alike when read
            return False
        bound: set[str] = set()
        inside: Counter[str] = Counter()
        for node in _walk_scope(statements):
            if isinstance(node, ast.Yield | ast.YieldFrom | ast.Await | ast.Global | ast.Nonlocal):
                return True
            if isinstance(node, ast.Name):
                if isinstance(node.ctx, ast.Load):
                    inside[node.id] += 1
                else:
                    bound.add(node.id)
        if not bound:
            return False
        loads = Counter(n.id for n in _walk_scope(function.body)
                        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
        return any(loads[name] > inside[name] for name in bound)

    def _dedent(self, statement: ast.If, block: list[ast.stmt], after: int) -> int | None:
        """How far a block can be dedented to its `if`'s place, line by line (None: it cannot).

        Args:
            statement: The `if`.
            block: Its body or its `else` block.
            after: The last line of what precedes the block (the header, or the `else:` line).
        """
        lines = self.lines
        if not _own_lines(statement, lines) or _first_line(block[0]) <= after:
            return None
        if _is_elif(statement, lines) and id(statement) not in self.promoted:
            return None  # its block belongs to the chain of an `if` above
        if not all(_own_lines(s, lines) for s in block):
            return None
        outer = lines[statement.lineno - 1][:statement.col_offset]
        first = lines[_first_line(block[0]) - 1]
        inner = first[:len(first) - len(first.lstrip(" \t"))]
        if not inner.startswith(outer) or len(inner) <= len(outer):
            return None
        end = block[-1].end_lineno or block[-1].lineno
        for number in range(_first_line(block[0]), end + 1):
            line = lines[number - 1]
            if line.strip() and not line.startswith(inner):
                return None  # a line of a multi-line string, or odd indentation
        return len(inner) - len(outer)

    def _decided_if(self, statement: ast.If, truth: bool) -> bool:
        """Decide a constant `if`; False where its dead part must stay (`_keeps`)."""
        dead = statement.body if truth is False else statement.orelse
        if dead and self._keeps(dead):
            return False
        lines = self.lines
        header_end = statement.test.end_lineno or statement.lineno
        if truth is False:
            if not statement.orelse:
                self._kill([statement])
                return True
            self._kill(statement.body)
            line = _else_line(statement, lines)
            chained = line is not None and lines[line - 1].lstrip().startswith("elif")
            if chained and _own_lines(statement, lines) and (
                    not _is_elif(statement, lines) or id(statement) in self.promoted) \
                    and _first_line(statement.body[0]) > header_end:
                # `if False: A elif B: ...` is `if B: ...`: the `elif` becomes the `if`
                self.unwrap[id(statement)] = ("elif", 0)
                self.quiet.add(id(statement))
                self.promoted.add(id(statement.orelse[0]))
            elif line is not None and not chained:
                amount = self._dedent(statement, statement.orelse, line)
                if amount is not None:
                    self.unwrap[id(statement)] = ("else", amount)
                    self.quiet.add(id(statement))
            self._visit(statement.orelse)
            return True
        if statement.orelse:
            self._kill(statement.orelse)
        amount = self._dedent(statement, statement.body, header_end)
        cuttable = not statement.orelse or (
            _else_line(statement, lines) is not None
            and all(_own_lines(e, lines) for e in statement.orelse))
        if amount is not None and cuttable:
            self.unwrap[id(statement)] = ("body", amount)
            self.quiet.add(id(statement))
        elif statement.orelse and cuttable:
            self.else_cut.add(id(statement))
        self._visit(statement.body)
        return True

    def _visit(self, body: list[ast.stmt]) -> None:
        ended = False  # a return, raise, continue or break came before in this block
        for index, statement in enumerate(body):
            if ended:
                if self._keeps(body[index:]):
                    ended = False  # unreached, but it shapes its function: it stays
                else:
                    self._kill([statement])
                    continue
            if isinstance(statement, ast.If):
                truth = _truth(self.value(statement.test))
                if truth is not None and self._decided_if(statement, truth):
                    ended = truth and any(isinstance(s, _TERMINATORS) for s in statement.body)
                    continue
            elif isinstance(statement, ast.While) and _truth(self.value(statement.test)) is False \
                    and not self._keeps(statement.body):
                if statement.orelse:
                    self._kill(statement.body)
                    self._visit(statement.orelse)
                else:
                    self._kill([statement])
                continue
            scope = isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef)
            if scope:
                self._functions.append(statement)  # type: ignore[arg-type]
            elif isinstance(statement, ast.ClassDef):
                self._functions.append(None)  # type: ignore[arg-type]
            for block in _blocks(statement):
                self._visit(block)
            if scope or isinstance(statement, ast.ClassDef):
                self._functions.pop()
            ended = isinstance(statement, _TERMINATORS)

    def value(self, node: ast.expr) -> Any:
        """The value of an expression of constants (_UNKNOWN when it needs the running program)."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.constants.get(node.id, _UNKNOWN)
        try:
            if isinstance(node, ast.UnaryOp):
                operand = self.value(node.operand)
                if operand is _UNKNOWN:
                    return _UNKNOWN
                if isinstance(node.op, ast.Not):
                    return not operand
                if isinstance(node.op, ast.USub):
                    return -operand
                if isinstance(node.op, ast.UAdd):
                    return +operand
                return _UNKNOWN
            if isinstance(node, ast.BoolOp):
                result: Any = _UNKNOWN
                for part in node.values:
                    result = self.value(part)
                    if result is _UNKNOWN:
                        return _UNKNOWN
                    if bool(result) is isinstance(node.op, ast.Or):
                        return result  # `and` stops at a falsy value, `or` at a truthy one
                return result
            if isinstance(node, ast.Compare):
                left = self.value(node.left)
                for op, comparator in zip(node.ops, node.comparators, strict=True):
                    right = self.value(comparator)
                    if left is _UNKNOWN or right is _UNKNOWN:
                        return _UNKNOWN
                    if not _COMPARE[type(op)](left, right):
                        return False
                    left = right
                return True
        except Exception:  # a comparison of constants that raises is left to the program
            return _UNKNOWN
        return _UNKNOWN


def _walk_scope(nodes: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Every node under these nodes, not entering nested functions, lambdas or classes."""
    pending = list(nodes)
    while pending:
        node = pending.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
                              | ast.ClassDef):
                pending.append(child)


def _truth(value: Any) -> bool | None:
    """The truth of a known value (None: unknown, or one whose truth cannot be taken)."""
    if value is _UNKNOWN:
        return None
    try:
        return bool(value)
    except Exception:
        return None


def _constant_names(tree: ast.Module) -> dict[str, Any]:
    """Module-level names bound exactly once, to a literal, and never rebound or set elsewhere."""
    bindings: dict[str, int] = {}

    def bind(name: str, times: int = 1) -> None:
        bindings[name] = bindings.get(name, 0) + times

    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bind(node.id)
        elif isinstance(node, ast.arg):
            bind(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bind(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                bind(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.Global | ast.Nonlocal):
            for name in node.names:
                bind(name, 2)
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            bind(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bind(node.rest)
        elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            bind(node.attr, 2)  # `module.NAME = ...` from another file of the program
    found: dict[str, Any] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        else:
            continue
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant):
            found[target.id] = value.value
    return {name: value for name, value in found.items() if bindings.get(name) == 1}


class _Cut:
    """The lines a strip removes, the blocks it dedents and the `pass` lines it writes."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.gone = [False] * len(lines)
        self.dedent = [0] * len(lines)
        self.fills: dict[int, str] = {}
        self.rewrite: dict[int, str] = {}  # lines written anew (an `elif` that becomes `if`)

    @classmethod
    def plan(cls, tree: ast.Module, source: str, drops: list[ast.stmt],
             dead: _Dead | None = None) -> _Cut | None:
        """Plan the removal of statements and the unwrapping of `if`s a constant decides.

        A statement that shares a line with another (`a = 1; b = 2`, `if x: y`) stays. A block all
        of whose statements go holds `pass` at the first one's place.

        Args:
            tree: The parsed text.
            source: The text.
            drops: The statements to remove (nested ones are covered by their ancestors).
            dead: The constant-decided `if`s to unwrap or cut (None: none).

        Returns:
            The plan; None when nothing changes.
        """
        lines = _LINE.findall(source)
        removable = {id(s) for s in drops if _own_lines(s, lines)}
        unwrap = dead.unwrap if dead is not None else {}
        else_cut = dead.else_cut if dead is not None else set()
        if not removable and not unwrap and not else_cut:
            return None
        cut = cls(lines)
        comments = _comment_lines(source)

        def remove(start: int, end: int) -> None:
            for i in range(start, end + 1):
                cut.gone[i] = True
            above = start - 1
            while above >= 0 and above in comments \
                    and not _FILE_MARKER.match(lines[above].strip()) and not cut.gone[above]:
                cut.gone[above] = True
                above -= 1
            below = end + 1
            while below < len(lines) and not lines[below].strip():
                cut.gone[below] = True
                below += 1

        def shift(block: list[ast.stmt], amount: int) -> None:
            for i in range(_first_line(block[0]) - 1, block[-1].end_lineno or block[-1].lineno):
                cut.dedent[i] += amount

        def drop_else(statement: ast.If) -> None:
            line = _else_line(statement, lines)
            assert line is not None
            remove(line - 1, (statement.orelse[-1].end_lineno or statement.lineno) - 1)

        def visit(body: list[ast.stmt], top: bool) -> None:
            going = [s for s in body if id(s) in removable]
            if going and len(going) == len(body) and not top:
                first = _first_line(body[0]) - 1
                cut.fills[first] = re.match(r"[ \t]*", lines[first]).group(0)  # type: ignore[union-attr]
            for statement in body:
                if id(statement) in removable:
                    remove(_first_line(statement) - 1,
                           (statement.end_lineno or statement.lineno) - 1)
                elif id(statement) in unwrap:
                    assert isinstance(statement, ast.If)
                    kind, amount = unwrap[id(statement)]
                    if kind == "elif":
                        chain = statement.orelse[0]
                        remove(_first_line(statement) - 1, chain.lineno - 2)
                        line = lines[chain.lineno - 1]
                        cut.rewrite[chain.lineno - 1] = line.replace("elif", "if", 1)
                        visit(statement.orelse, top)
                        continue
                    block = statement.body if kind == "body" else statement.orelse
                    remove(_first_line(statement) - 1, _first_line(block[0]) - 2)
                    shift(block, amount)
                    if kind == "body" and statement.orelse:
                        drop_else(statement)
                    visit(block, top)
                elif id(statement) in else_cut:
                    assert isinstance(statement, ast.If)
                    drop_else(statement)
                    visit(statement.body, False)
                else:
                    for block in _blocks(statement):
                        visit(block, False)

        visit(tree.body, True)
        return cut

    def apply(self, source: str) -> str:
        """The text with the planned lines removed or dedented, and `pass` in emptied blocks.

        Args:
            source: The text the plan was made for.

        Returns:
            The text; the source unchanged when the result would not parse.
        """
        out: list[str] = []
        for index, (line, drop) in enumerate(zip(self.lines, self.gone, strict=True)):
            line = self.rewrite.get(index, line)
            amount = self.dedent[index]
            if not drop:
                out.append(line[amount:] if line[:amount].strip() == "" else line)
            elif index in self.fills:
                ending = line[len(line.rstrip("\r\n")):] or "\n"
                out.append(f"{self.fills[index][amount:]}pass{ending}")
        stripped = "".join(out)
        try:
            pyparse.parse(stripped)
        except _UNPARSABLE:
            return source
        return stripped


def _own_lines(statement: ast.stmt, lines: list[str]) -> bool:
    """Whether a statement starts its first line and ends its last (nothing else on them)."""
    first = _first_line(statement) - 1
    decorators = getattr(statement, "decorator_list", [])
    column = min([statement.col_offset, *(d.col_offset - 1 for d in decorators)])
    if lines[first].encode("utf-8")[:max(column, 0)].strip():
        return False
    last = (statement.end_lineno or statement.lineno) - 1
    tail = lines[last].encode("utf-8")[statement.end_col_offset or 0:].decode("utf-8", "replace")
    return not tail.strip() or tail.strip().startswith("#")


def _is_elif(statement: ast.If, lines: list[str]) -> bool:
    """Whether an `if` statement is the `elif` of another."""
    return lines[statement.lineno - 1].lstrip().startswith("elif")


def _else_line(statement: ast.If, lines: list[str]) -> int | None:
    """The (1-based) line of an `if` statement's `else:` or `elif` keyword (None: not found)."""
    if not statement.orelse:
        return None
    first = statement.orelse[0]
    if isinstance(first, ast.If) and lines[first.lineno - 1].lstrip().startswith("elif"):
        return first.lineno
    end_of_body = statement.body[-1].end_lineno or statement.body[-1].lineno
    for number in range(_first_line(first) - 1, end_of_body, -1):
        text = lines[number - 1].lstrip()
        if re.match(r"else\s*:", text):
            indent = len(lines[number - 1]) - len(text)
            return number if indent == statement.col_offset else None
    return None


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

    def __init__(self, tree: ast.Module, local_modules: frozenset[str], entry_line: int,
                 dead: Collection[int] = frozenset(),
                 quiet: Collection[int] = frozenset()) -> None:
        self.tree = tree
        self.local_modules = local_modules
        self.entry_line = entry_line
        self.dead = dead  # ids of statements that never run: they reach nothing
        self.quiet = quiet  # ids of `if`s a constant decides and whose test leaves the text
        self.module_aliases = self._module_aliases(tree)
        self.local_aliases = {alias for alias, module in self.module_aliases.items()
                              if module in local_modules or module.split(".")[0] in local_modules}
        self.dynamic = False
        self.rootless = False  # the module has no statement that runs: kept whole

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
            self.rootless = True
            return []
        kept = [s for s in self.tree.body if not any(s is d for d in drops)]
        for function in (f for s in kept for f in self._functions(s)):
            drops.extend(self._body(function.body, module=False) or [])
        return [] if self.dynamic else drops

    def _live(self, node: ast.AST) -> Iterator[ast.AST]:
        """Every node under a node (itself included), leaving out statements that never run."""
        pending = [node]
        while pending:
            current = pending.pop()
            if isinstance(current, ast.stmt) and id(current) in self.dead:
                continue
            yield current
            if isinstance(current, ast.If) and id(current) in self.quiet:
                pending.extend(n for n in ast.iter_child_nodes(current) if n is not current.test)
            else:
                pending.extend(ast.iter_child_nodes(current))

    def _functions(self, statement: ast.stmt) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
        """The functions defined in a statement's live code (itself, methods, nested)."""
        for node in self._live(statement):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield node

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
            if id(statement) in self.dead:
                continue  # removed as dead code: neither a root nor a definition
            names = self._defines(statement, module)
            if names is not None:
                candidates[index] = names
        roots = [s for i, s in enumerate(body) if i not in candidates and not _inert(s)
                 and id(s) not in self.dead]
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
        return [body[i] for i in candidates if i not in reached]

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
        for node in self._live(statement):
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
