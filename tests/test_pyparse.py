"""Every parse of Python source in innolab goes through `innolab.pyparse`: one at a time, retried
once in a fresh thread when CPython 3.11's parser trips."""

from __future__ import annotations

import ast
import threading
import time
from pathlib import Path

import innolab
from innolab import pyparse

PACKAGE = Path(innolab.__file__).parent
OWN = PACKAGE / "pyparse.py"


def _raw_parses(path: Path, root: Path = PACKAGE) -> list[str]:
    """The places in a module that parse Python source without `pyparse`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import) and any(a.name == "ast" and a.asname for a in node.names):
            found.append(f"{where} imports ast under another name")
        elif isinstance(node, ast.ImportFrom) and node.module == "ast":
            found.append(f"{where} imports from ast")
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id == "ast"
              and node.attr in ("parse", "literal_eval", "PyCF_ONLY_AST")):
            found.append(f"{where} ast.{node.attr}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "getattr" and len(node.args) > 1
              and isinstance(node.args[0], ast.Name) and node.args[0].id == "ast"):
            found.append(f"{where} getattr(ast, ...)")
    return found


def test_no_module_but_pyparse_parses_python_source():
    offenders = [hit for path in sorted(PACKAGE.rglob("*.py")) if path != OWN
                 for hit in _raw_parses(path)]
    assert offenders == []


def test_the_scan_finds_each_way_around_pyparse(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import ast\nimport ast as a\nfrom ast import parse\nast.parse('1')\n"
                      "ast.literal_eval('1')\ncompile('1', 'f', 'exec', ast.PyCF_ONLY_AST)\n"
                      "getattr(ast, 'parse')\n")
    assert len(_raw_parses(module, tmp_path)) == 6


def test_parses_wait_for_each_other(monkeypatch):
    active, most = [0], [0]
    real = ast.parse

    def slow_parse(source, *args, **kwargs):
        active[0] += 1
        most[0] = max(most[0], active[0])
        time.sleep(0.01)
        active[0] -= 1
        return real(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", slow_parse)
    threads = [threading.Thread(target=lambda: [pyparse.parse("x = 1") for _ in range(5)])
               for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 1


def test_a_parse_that_trips_is_retried_in_a_fresh_thread(monkeypatch):
    real = ast.parse
    caller = threading.get_ident()
    threads = []

    def trips_in_the_caller(source, *args, **kwargs):
        threads.append(threading.get_ident())
        if threading.get_ident() == caller:
            raise SystemError("AST constructor recursion depth mismatch (before=141, after=32)")
        return real(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", trips_in_the_caller)
    tree = pyparse.parse("def f():\n    return 1\n")
    assert isinstance(tree.body[0], ast.FunctionDef)
    assert len(threads) == 2 and threads[1] != caller


def test_a_syntax_error_found_on_the_retry_reaches_the_caller(monkeypatch):
    real = ast.parse
    caller = threading.get_ident()

    def trips_in_the_caller(source, *args, **kwargs):
        if threading.get_ident() == caller:
            raise SystemError("AST constructor recursion depth mismatch")
        return real(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", trips_in_the_caller)
    try:
        pyparse.parse("def (:")
    except SyntaxError:
        pass
    else:
        raise AssertionError("a syntax error was swallowed")
