"""The def-use slice of a persistent interpreter's actions: the cells a result depends on.

Each cell (one action's code) is read with `ast`: the module-level names it defines (strongly: an
unconditional top-level binding, which hides earlier ones; weakly: a binding inside a compound
statement, an augmented assignment, a mutation such as `x[i] = v`, `x.attr = v`, a statement
`x.method(...)` or `f(x)` whose value is discarded), the names it uses before defining them (free
names of the functions it defines included), and the files it writes and reads by literal path.
Capture (innolab.gym.capture) adds the files each cell really wrote and read. `slice_cells` walks
back from the cell that wrote a file: a cell is kept when it defines a name, or writes a file, that
a kept later cell needs. A cell that defines nothing the result uses is left out.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from innolab import pyparse

BUILTINS = frozenset(dir(builtins))
STAR = "*"
WRITE_WORDS = ("write", "save", "dump", "to_", "savetxt", "savez")
READ_WORDS = ("read", "load", "open")


@dataclass
class Cell:
    """What one cell defines, uses, writes and reads.

    Attributes:
        defs: module-level names it may bind or change.
        kills: the names among them it binds unconditionally (earlier bindings are hidden).
        uses: module-level names it reads before binding them.
        writes: workspace files it writes, replacing them.
        appends: workspace files it appends to.
        reads: workspace files it reads.
        parsed: whether the code parses (a cell that does not ran nothing).
    """

    defs: set[str] = field(default_factory=set)
    kills: set[str] = field(default_factory=set)
    uses: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)
    appends: set[str] = field(default_factory=set)
    reads: set[str] = field(default_factory=set)
    parsed: bool = True


def analyse(code: str) -> Cell:
    """What a cell defines, uses, writes and reads, read from its code.

    Args:
        code: the cell's Python code.

    Returns:
        The cell's analysis (`parsed` False, and nothing else, for code that does not parse).
    """
    try:
        tree = pyparse.parse(code)
    except (SyntaxError, ValueError):
        return Cell(parsed=False)
    cell = Cell()
    bound: set[str] = set()
    for statement in tree.body:
        uses = _loads(statement) - bound
        cell.uses |= uses
        strong, weak = _binds(statement)
        cell.defs |= strong | weak
        cell.kills |= strong
        bound |= strong
    _literal_files(tree, cell)
    cell.uses -= BUILTINS - cell.defs
    return cell


def slice_cells(cells: Sequence[Cell], target: int) -> list[int]:
    """The cells the target cell depends on, and the target, in order.

    Args:
        cells: the cells in the order they ran.
        target: the index of the cell whose result is wanted (the one that wrote it).

    Returns:
        The kept cells' indices, ascending.

    Raises:
        IndexError: the target is not one of the cells.
    """
    if not 0 <= target < len(cells):
        raise IndexError(f"target cell {target} is not among the {len(cells)} cells")
    names = set(cells[target].uses)
    files = set(cells[target].reads) | set(cells[target].appends)
    kept = [target]
    for index in range(target - 1, -1, -1):
        cell = cells[index]
        if not cell.parsed:
            continue
        star = STAR in cell.defs and bool(names)
        if not (star or cell.defs & names or (cell.writes | cell.appends) & files):
            continue
        kept.append(index)
        names = (names - cell.kills) | cell.uses
        files = (files - cell.writes) | cell.reads | cell.appends
    return sorted(kept)


# ------------------------------------------------------------------------------------- names


def _loads(node: ast.AST) -> set[str]:
    """The module-level names a statement reads (the free names of its nested scopes included)."""
    found: set[str] = set()
    _collect_loads(node, found)
    return found


def _collect_loads(node: ast.AST, found: set[str]) -> None:
    if isinstance(node, ast.Name):
        if isinstance(node.ctx, ast.Load | ast.Del):
            found.add(node.id)
        return
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        arguments = node.args
        for default in [*arguments.defaults, *arguments.kw_defaults]:
            if default is not None:
                _collect_loads(default, found)
        for decorator in getattr(node, "decorator_list", []):
            _collect_loads(decorator, found)
        body = node.body if isinstance(node.body, list) else [node.body]
        found |= _free(body, _argument_names(arguments))
        return
    if isinstance(node, ast.ClassDef):
        for outer in [*node.bases, *node.keywords, *node.decorator_list]:
            _collect_loads(outer, found)
        found |= _free(node.body, set())
        return
    if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
        generators = node.generators
        _collect_loads(generators[0].iter, found)
        inner: set[str] = set()
        targets: set[str] = set()
        for index, generator in enumerate(generators):
            targets |= _stored(generator.target)
            if index:
                _collect_loads(generator.iter, inner)
            for condition in generator.ifs:
                _collect_loads(condition, inner)
        parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        for part in parts:
            _collect_loads(part, inner)
        found |= inner - targets
        return
    for child in ast.iter_child_nodes(node):
        _collect_loads(child, found)


def _free(body: list[ast.AST], parameters: set[str]) -> set[str]:
    """The names a nested scope reads from outside it (global declarations respected)."""
    declared = _declared_global(body)
    local = (parameters | _bound_in(body)) - declared
    found: set[str] = set()
    for statement in body:
        _collect_loads(statement, found)
    return found - local


def _argument_names(arguments: ast.arguments) -> set[str]:
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    return {a.arg for a in every}


def _bound_in(body: Iterable[ast.AST]) -> set[str]:
    """The names a scope binds (nested scopes' own bindings excluded, their names included)."""
    names: set[str] = set()
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            continue
        if isinstance(node, ast.Lambda | ast.ListComp | ast.SetComp | ast.GeneratorExp
                      | ast.DictComp):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            names.add(node.name)
        stack.extend(ast.iter_child_nodes(node))
    return names


def _declared_global(body: Iterable[ast.AST]) -> set[str]:
    names: set[str] = set()
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Global):
                names |= set(node.names)
    return names


def _stored(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store)}


def _root(node: ast.AST) -> str | None:
    """The name an attribute or subscript chain starts from (`a` of `a.b[0].c`)."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _binds(statement: ast.stmt) -> tuple[set[str], set[str]]:
    """The names a top-level statement binds unconditionally, and those it may bind or change."""
    strong: set[str] = set()
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        strong.add(statement.name)
    elif isinstance(statement, ast.Import | ast.ImportFrom):
        for alias in statement.names:
            strong.add(STAR if alias.name == "*" else (alias.asname or alias.name).split(".")[0])
    elif isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value is not None:
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        for target in targets:
            strong |= _stored(target)
    weak = _bound_in([statement]) - strong
    weak |= _mutated(statement)
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        weak |= _declared_global(statement.body) & _bound_in(statement.body)
    return strong, weak


def _mutated(statement: ast.stmt) -> set[str]:
    """Names a statement may change in place (mutations, discarded calls on or with them)."""
    names: set[str] = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        if isinstance(node, ast.Attribute | ast.Subscript) and isinstance(
                node.ctx, ast.Store | ast.Del):
            names.add(_root(node.value) or "")
        elif isinstance(node, ast.AugAssign):
            names.add(_root(node.target) or "")
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            call = node.value
            if isinstance(call.func, ast.Attribute):
                names.add(_root(call.func.value) or "")
            elif isinstance(call.func, ast.Name) and call.func.id not in BUILTINS:
                names |= {a.id for a in call.args if isinstance(a, ast.Name)}
    names.discard("")
    return names


# ------------------------------------------------------------------------------------- files


def _literal_files(tree: ast.AST, cell: Cell) -> None:
    """Files named by literal strings in calls that write or read them."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node).lower()
        paths = [a.value for a in [*node.args, *(k.value for k in node.keywords)]
                 if isinstance(a, ast.Constant) and isinstance(a.value, str) and _pathlike(a.value)]
        receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
        if isinstance(receiver, ast.Call) and _call_name(receiver) in ("Path", "PurePath"):
            paths += [a.value for a in receiver.args if isinstance(a, ast.Constant)
                      and isinstance(a.value, str) and _pathlike(a.value)]
        if not paths:
            continue
        if name == "open":
            mode = _open_mode(node)
            target = (cell.appends if "a" in mode else cell.writes if set(mode) & set("wx+")
                      else cell.reads)
            target.update(paths[:1])
        elif any(word in name for word in WRITE_WORDS):
            cell.writes.update(paths)
        elif any(word in name for word in READ_WORDS):
            cell.reads.update(paths)


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _open_mode(call: ast.Call) -> str:
    mode = call.args[1] if len(call.args) > 1 else next(
        (k.value for k in call.keywords if k.arg == "mode"), None)
    return mode.value if isinstance(mode, ast.Constant) and isinstance(mode.value, str) else "r"


def _pathlike(text: str) -> bool:
    return 0 < len(text) < 260 and "\n" not in text and " " not in text and (
        "." in text or "/" in text)
