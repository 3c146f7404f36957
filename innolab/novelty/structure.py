"""A structural distance over normalised Python ASTs.

Sees through renaming, comments, layout and reordering.

Normalisation (`normalise`):

* docstrings, comments and formatting go (the AST has none of the last two);
* identifiers are canonicalised by role: within each top-level statement, parameters become
  `a0, a1...`, other local and global names `v0, v1...` in order of first appearance; names of
  functions, classes and imported modules, builtins and attribute names keep their spelling (they
  are the program's interface and its vocabulary of library calls);
* literals are bucketed: small integers (|n| < 10) and booleans stay, other numbers become `NUM`,
  strings `STR`;
* top-level statements are sorted (imports first), so reordering definitions changes nothing.

Distance (`StructuralBackend`): 100·(1 − cosine) between the bags of (a) every AST node's depth-2
shape (its type with its children's types) and (b) 1–4-grams of the normalised token stream,
weighted equally.

What it cannot see: two *different implementations of the same method* (a loop and a vectorised
expression that compute the same thing) look different to it, and two *different methods written
alike* (same control flow, other formulas bucketed into the same literals) look close. It compares
code with code; given text that does not parse as Python (a method card), it falls back to
character n-gram TF-IDF of the text.
"""

from __future__ import annotations

import ast
import builtins
import functools
import io
import math
import tokenize
from collections import Counter

from innolab import pyparse
from innolab.novelty.backends import TfidfBackend

BUILTINS = set(dir(builtins))
SMALL_INT = 10
# the Scorer computes distances in threads; CPython 3.11's parser needs one at a time
_PARSE_LOCK = pyparse.lock()


class _Canonical(ast.NodeTransformer):
    """Renames identifiers by role inside one top-level statement; buckets literals."""

    def __init__(self, keep: set[str]) -> None:
        self.keep = keep
        self.args: dict[str, str] = {}
        self.names: dict[str, str] = {}

    def _name(self, name: str) -> str:
        if name in self.keep or name in BUILTINS or name in ("self", "cls", "_"):
            return name
        if name in self.args:
            return self.args[name]
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_arg(self, node: ast.arg) -> ast.arg:
        if node.arg not in ("self", "cls"):
            node.arg = self.args.setdefault(node.arg, f"a{len(self.args)}")
        node.annotation = None
        return node

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self._name(node.id)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.returns = None
        _drop_docstring(node)
        return self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        _drop_docstring(node)
        return self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        value = node.value
        if isinstance(value, bool) or value is None or value is Ellipsis:
            return node
        if isinstance(value, int) and abs(value) < SMALL_INT:
            return node
        if isinstance(value, int | float | complex):
            return ast.Constant("NUM")
        if isinstance(value, str | bytes):
            return ast.Constant("STR")
        return node


def _drop_docstring(node: ast.AST) -> None:
    body = getattr(node, "body", None)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined]


def parse_code(text: str) -> ast.Module | None:
    """Return the AST of a text that is Python code (not a sentence that happens to parse).

    Args:
        text: The text.

    Returns:
        Its AST, or None when it does not parse or holds no statement that only code has.
    """
    try:
        tree = pyparse.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    code_like = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AugAssign,
                 ast.For, ast.While, ast.Import, ast.ImportFrom, ast.Return)
    return tree if any(isinstance(n, code_like) for n in ast.walk(tree)) else None


def normalise_tree(tree: ast.Module) -> ast.Module:
    """Return a program's AST normalised (see the module's docstring), changing it in place.

    Args:
        tree: The program's AST.

    Returns:
        The same tree, normalised.
    """
    keep = {n.name for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            keep |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
    _drop_docstring(tree)
    statements = []
    for statement in tree.body:
        canonical = _Canonical(keep).visit(statement)
        statements.append((not isinstance(canonical, ast.Import | ast.ImportFrom),
                           ast.unparse(canonical), canonical))
    tree.body = [s for _, _, s in sorted(statements, key=lambda t: (t[0], t[1]))]
    return ast.fix_missing_locations(tree)


def normalise(source: str) -> str:
    """Return the canonical text of a program (see the module's docstring).

    Args:
        source: The program.

    Returns:
        Its canonical text; text that is not Python code comes back unchanged.
    """
    with _PARSE_LOCK:
        tree = parse_code(source)
        return source if tree is None else ast.unparse(normalise_tree(tree)) + "\n"


def _shapes(tree: ast.AST) -> Counter[str]:
    shapes: Counter[str] = Counter()
    for node in ast.walk(tree):
        children = [type(c).__name__ for c in ast.iter_child_nodes(node)
                    if not isinstance(c, ast.expr_context)]
        label = type(node).__name__
        if isinstance(node, ast.Name):
            label += f":{node.id if not node.id[1:].isdigit() else node.id[0]}"
        elif isinstance(node, ast.Attribute):
            label += f":{node.attr}"
        elif isinstance(node, ast.Constant):
            label += f":{node.value!r}"
        shapes[f"{label}({','.join(children)})"] += 1
    return shapes


def _token_grams(text: str, n_max: int = 4) -> Counter[str]:
    tokens = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT,
                              tokenize.ENDMARKER, tokenize.COMMENT):
                continue
            tokens.append(token.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        tokens = text.split()
    grams: Counter[str] = Counter()
    for n in range(1, n_max + 1):
        grams.update(" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    return grams


def _cosine(a: Counter[str], b: Counter[str]) -> float:
    dot = sum(v * b[k] for k, v in a.items() if k in b)
    norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    return dot / norm if norm else 0.0


@functools.lru_cache(maxsize=512)
def _features(text: str) -> tuple[Counter[str], Counter[str]] | None:
    with _PARSE_LOCK:
        tree = parse_code(text)
        if tree is None:
            return None
        normal = normalise_tree(tree)
        return _shapes(normal), _token_grams(ast.unparse(normal))


def structural_distance(a: str, b: str) -> float | None:
    """Return the structural distance of two programs after normalisation.

    Args:
        a: A program.
        b: Another program.

    Returns:
        The distance in [0, 100], or None when either is not Python code.
    """
    features_a, features_b = _features(a), _features(b)
    if features_a is None or features_b is None:
        return None
    shape = _cosine(features_a[0], features_b[0])
    grams = _cosine(features_a[1], features_b[1])
    return float(min(100.0, max(0.0, 100.0 * (1.0 - (shape + grams) / 2))))


class StructuralBackend:
    """The `ast` back end: structural distance for code, TF-IDF of the text for anything else."""

    name = "ast"

    def distance(self, a: str, b: str) -> float:
        """Return the distance of two texts in [0, 100]: structural for code, else TF-IDF.

        Raises:
            NoveltyError: When the texts are not code and one is empty.
        """
        value = structural_distance(a, b)
        if value is not None:
            return value
        return TfidfBackend().distance(a, b)
