"""Cosmetic variants of a program (renaming, reformatting, reordering): the circular regression set.

A cosmetic variant computes exactly what the original computes: parameters and local variables get
new names, docstrings and comments go, the layout is regenerated, and top-level definitions may be
reordered. Function names (the program's interface), attributes, builtins and imported modules keep
their names. The "short" style renames as the normaliser does, so triplets built with it only check
that the normaliser inverts itself (a regression check, `innolab.novelty.triplets`).
"""

from __future__ import annotations

import ast
import builtins

from innolab import pyparse

BUILTINS = set(dir(builtins))


class _Renamer(ast.NodeTransformer):
    def __init__(self, keep: set[str], style: str) -> None:
        self.keep = keep
        self.style = style
        self.mapping: dict[str, str] = {}

    def _new(self, name: str) -> str:
        if name in self.keep or name in BUILTINS or name == "_":
            return name
        if name not in self.mapping:
            index = len(self.mapping)
            self.mapping[name] = f"v{index}" if self.style == "short" \
                else f"{name}_{'xyzw'[index % 4]}{index}"
        return self.mapping[name]

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg = self._new(node.arg)
        return node

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self._new(node.id)
        return node


def _strip_docstrings(tree: ast.Module) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module):
            body = node.body
            if body and isinstance(body[0], ast.Expr) \
                    and isinstance(getattr(body[0], "value", None), ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]


def cosmetic_variant(source: str, style: str = "short", reorder: bool = False) -> str:
    """Return a cosmetic variant of a program: locals renamed, docstrings gone, layout regenerated.

    Args:
        source: The program.
        style: "short" renames to v0, v1...; "suffixed" to name_x0, name_y1...
        reorder: Whether to reverse the order of the top-level statements after the imports.

    Returns:
        The variant's source.

    Raises:
        SyntaxError: When `source` is not Python.
    """
    tree = pyparse.parse(source)
    keep = {n.name for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    keep |= {alias.asname or alias.name.split(".")[0] for n in imports for alias in n.names}
    _strip_docstrings(tree)
    tree = _Renamer(keep, style).visit(tree)
    if reorder:
        imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        rest = [n for n in tree.body if not isinstance(n, ast.Import | ast.ImportFrom)]
        tree.body = imports + rest[::-1]
    with pyparse.lock():
        return ast.unparse(ast.fix_missing_locations(tree)) + "\n"
