"""Every parse of Python source in innolab goes through `innolab.pyparse`, one at a time."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

import innolab
from innolab import pyparse

PACKAGE = Path(innolab.__file__).parent


def _raw_parses(path: Path) -> list[int]:
    tree = ast.parse(path.read_text())
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "parse"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "ast"
    ]


def test_no_module_but_pyparse_calls_ast_parse():
    offenders = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "pyparse.py" and (lines := _raw_parses(path))
    }
    assert offenders == {}


def test_parses_from_many_threads_at_once_all_come_back_whole():
    source = "\n".join(f"def f{i}(x):\n    return [y * {i} for y in range(x) if y % 2]"
                       for i in range(200))
    expected = ast.dump(ast.parse(source))
    results: list[str] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(20):
                results.append(ast.dump(pyparse.parse(source)))
        except BaseException as error:  # collected for the assertion below
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(results) == 160 and set(results) == {expected}
