"""No import cycle anywhere in innolab: every module-to-module import, lazy ones inside functions
included."""

import grimp
import pytest


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """One cycle (its chain of modules, the first repeated at the end) per direct import that
    closes one."""
    cycles = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                cycles.append([importer, *back])
    return cycles


def test_innolab_has_no_import_cycle():
    graph = grimp.build_graph("innolab", cache_dir=None)
    assert len(graph.modules) > 50  # the whole package was read
    assert import_cycles(graph) == []


def test_a_cycle_is_found_however_long():
    graph = grimp.ImportGraph()
    for module in ("pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d"):
        graph.add_module(module)
    graph.add_import(importer="pkg.a", imported="pkg.b")
    graph.add_import(importer="pkg.b", imported="pkg.c")
    graph.add_import(importer="pkg.d", imported="pkg.c")
    assert import_cycles(graph) == []
    graph.add_import(importer="pkg.c", imported="pkg.a")
    assert import_cycles(graph) == [
        ["pkg.a", "pkg.b", "pkg.c", "pkg.a"],
        ["pkg.b", "pkg.c", "pkg.a", "pkg.b"],
        ["pkg.c", "pkg.a", "pkg.b", "pkg.c"],
    ]


@pytest.mark.parametrize("lazy", [False, True])
def test_a_planted_cycle_in_the_package_is_found(tmp_path, monkeypatch, lazy):
    # A package whose two modules import each other, one of them inside a function, as novelty's
    # back ends did.
    package = tmp_path / "planted"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "one.py").write_text("from planted import two\n")
    body = "def make():\n    from planted.one import x\n" if lazy else "import planted.one\n"
    (package / "two.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    cycles = import_cycles(grimp.build_graph("planted", cache_dir=None))
    assert ["planted.one", "planted.two", "planted.one"] in cycles
