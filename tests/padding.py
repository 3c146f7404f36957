"""Adversarial padding for the dead-code tests: helpers reached only by code that never runs.

Each form inserts 50 helpers (functions that call one another, and classes) into a program, and
reaches them only from code that never runs: an `if False:` block, an `if 0:` block, a branch on
a module constant bound once to False, statements after a `return`, or classes made only under
`if not True:`. `pad` returns the padded text and, for each of its lines, the line of the
original it is (None for an inserted line), so that a coverage record of the padded program maps
back onto the original.
"""

from __future__ import annotations

import ast
import textwrap

HELPERS = 50
FORMS = ("if-false", "if-0", "named-constant", "after-return", "unused-classes")
# padding that only a run tells apart: one-line helpers called on one line, under a test that the
# running program decides (static reachability must keep it: it may run)
RUNTIME_FORMS = ("one-line-runtime",)


def helper_functions(count: int = HELPERS) -> str:
    """`count` helpers that call one another, each with a loop and arithmetic of its own."""
    out = []
    for k in range(count):
        callee = f"pad_helper_{k - 1}(values[:-1]) + " if k else ""
        out.append(textwrap.dedent(f'''
            def pad_helper_{k}(values, scale={k + 1}):
                """Helper {k}: a weighted sum over a window."""
                total = 0.0
                for index, value in enumerate(values):
                    if index % {k % 3 + 2} == 0:
                        total += value * scale
                    else:
                        total -= value / scale
                return {callee}total
        '''))
    return "".join(out)


def helper_classes(count: int = HELPERS) -> str:
    """`count` classes with a constructor and a method each, calling one another."""
    out = []
    for k in range(count):
        other = f"PadModel{k - 1}(self.weight).predict(x) + " if k else ""
        out.append(textwrap.dedent(f'''
            class PadModel{k}:
                """Model {k}: a linear map."""

                def __init__(self, weight={k}.5):
                    self.weight = weight

                def predict(self, x):
                    return {other}self.weight * x
        '''))
    return "".join(out)


def _calls(count: int, indent: str) -> list[str]:
    return [f"{indent}pad_helper_{k}([1.0, 2.0, 3.0])\n" for k in range(count)]


def _head_end(tree: ast.Module) -> int:
    """The last line of the program's leading docstring and imports (0: none)."""
    after = 0
    for statement in tree.body:
        if isinstance(statement, ast.Import | ast.ImportFrom) or (
                statement is tree.body[0] and isinstance(statement, ast.Expr)):
            after = statement.end_lineno or statement.lineno
        else:
            break
    return after


def _return_site(tree: ast.Module) -> tuple[int, str] | None:
    """The line of a `return` at the top level of a module-level function, and its indent."""
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef):
            for inner in statement.body:
                if isinstance(inner, ast.Return):
                    return inner.end_lineno or inner.lineno, " " * inner.col_offset
    return None


def applicable(source: str, form: str) -> bool:
    """Whether a form can pad this program (after-return needs a function that returns)."""
    return form != "after-return" or _return_site(ast.parse(source)) is not None


def pad(source: str, form: str) -> tuple[str, list[int | None]]:
    """A program padded by one form, and the original line of each of its lines.

    Args:
        source: The program.
        form: One of FORMS.

    Returns:
        The padded text and, for each of its (1-based) lines in order, the original's line number
        (None for a line the padding inserted).
    """
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    numbered: list[tuple[str, int | None]] = [(line, i + 1) for i, line in enumerate(lines)]
    head = _head_end(tree)
    if form == "one-line-runtime":
        helpers = "".join(f"def pad_line_{k}(v): return [x * {k + 1} for x in v]\n"
                          for k in range(HELPERS))
        calls = "; ".join(f"pad_line_{k}([1.0])" for k in range(HELPERS))
        block = helpers + "\n\nimport sys as _pad_sys\nif len(_pad_sys.argv) > 99: " + calls + "\n"
    elif form == "unused-classes":
        block = helper_classes() + "\n\nif not True:\n" + "".join(
            f"    PadModel{k}().predict(1.0)\n" for k in range(HELPERS))
    elif form == "after-return":
        block = helper_functions()
    else:
        guard = {"if-false": "if False:\n", "if-0": "if 0:\n",
                 "named-constant": "PADDING_ON = False\n\n\nif PADDING_ON:\n"}[form]
        block = helper_functions() + "\n\n" + guard + "".join(_calls(HELPERS, "    "))
    inserted = [(line, None) for line in ("\n\n" + block + "\n\n").splitlines(keepends=True)]
    numbered = numbered[:head] + inserted + numbered[head:]
    if form == "after-return":
        site = _return_site(tree)
        assert site is not None, "after-return needs a module-level function with a return"
        line, indent = site
        at = next(i for i, (_, original) in enumerate(numbered) if original == line) + 1
        numbered[at:at] = [(text, None) for text in _calls(HELPERS, indent)]
    return "".join(text for text, _ in numbered), [original for _, original in numbered]
