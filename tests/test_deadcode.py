"""Dead-code removal: reachability rules, runnable results, and padding that buys no novelty."""

import ast
import functools
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from innolab.novelty.deadcode import strip_dead_code
from innolab.novelty.registry import make_backend
from innolab.novelty.scoring import comparable, known_code
from innolab.novelty.structure import StructuralBackend
from innolab.novelty.variants import cosmetic_variant
from innolab.tasks import get_task
from innolab.tasks.registry import builtin_ids

# Fifteen helpers nothing calls, written as an agent pads a program: utilities that call one
# another, a class, a cached function, constants and the imports they need.
PADDING = textwrap.dedent('''
    import json as _json
    import statistics
    from functools import lru_cache as _memo
    from itertools import combinations as _pairs

    PADDING_SCALE = 0.5
    _TABLE = [1, 2, 3, 5, 8]


    def normalise_vector(v):
        """Scale a vector to unit length."""
        norm = sum(x * x for x in v) ** 0.5
        return [x / norm for x in v] if norm else list(v)


    def pairwise_gaps(points):
        gaps = []
        for a, b in _pairs(points, 2):
            gaps.append(((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2) ** 0.5)
        return gaps


    def smallest_gap(points):
        return min(pairwise_gaps(points), default=0.0)


    def clamp(value, low=0.0, high=1.0):
        return max(low, min(high, value))


    def moving_average(values, width=3):
        out = []
        for i in range(len(values) - width + 1):
            out.append(statistics.fmean(values[i:i + width]))
        return out


    def save_report(path, payload):
        with open(path, "w") as handle:
            _json.dump(payload, handle, indent=2)


    def load_report(path):
        with open(path) as handle:
            return _json.load(handle)


    def grid_points(k):
        step = 1.0 / (k + 1)
        return [(step * (i + 1), step * (j + 1)) for i in range(k) for j in range(k)]


    def score_grid(k):
        return smallest_gap(grid_points(k)) * PADDING_SCALE


    def random_walk(rng, steps):
        position = 0.0
        trace = []
        for _ in range(steps):
            position += rng.normal()
            trace.append(clamp(position, -10, 10))
        return trace


    @_memo(maxsize=None)
    def fibonacci(n):
        return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)


    def fibonacci_table(n):
        return [fibonacci(i) for i in range(n)] + _TABLE


    class RunningStats:
        def __init__(self):
            self.count = 0
            self.total = 0.0

        def push(self, value):
            self.count += 1
            self.total += value

        def mean(self):
            return self.total / self.count if self.count else float("nan")


    def summarise(values):
        stats = RunningStats()
        for value in values:
            stats.push(value)
        return {"mean": stats.mean(), "n": stats.count}


    def debug_dump(obj, path="debug.json"):
        save_report(path, {"repr": repr(obj), "summary": summarise(moving_average([1, 2, 3]))})
''')
HELPERS = 15


def _pad(source: str) -> str:
    """The program with PADDING after its imports (the imports the helpers need in it)."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    after = 0
    for statement in tree.body:
        if isinstance(statement, ast.Import | ast.ImportFrom) or (
                statement is tree.body[0] and isinstance(statement, ast.Expr)):
            after = statement.end_lineno
        else:
            break
    head = "".join(lines[:after])
    return head + PADDING + "\n\n" + "".join(lines[after:])


def test_padding_holds_fifteen_helpers():
    tree = ast.parse(PADDING)
    defined = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    assert len(defined) == HELPERS

SYNONYMS = {"solve": "optimise", "write": "save", "worker": "job", "run": "launch",
            "circles": "discs", "points": "pts", "radii": "radius_list", "best": "top",
            "score": "value", "grid": "lattice", "random": "rand", "search": "explore",
            "step": "move", "schedule": "plan", "pack": "place", "n": "count", "rng": "gen",
            "args": "options", "result": "outcome", "results": "outcomes", "x": "xs", "y": "ys",
            "z": "vec", "r": "rad", "i": "idx", "j": "jdx", "k": "kk", "out": "target"}


class _MeaningfulRenamer(ast.NodeTransformer):
    """Renames functions, classes, parameters and variables as a person would: by synonym."""

    def __init__(self, keep: set[str]) -> None:
        self.keep = keep

    def new(self, name: str) -> str:
        if name in self.keep or name.startswith("__"):
            return name
        words = name.split("_")
        renamed = "_".join(SYNONYMS.get(w, w) for w in words)
        return renamed if renamed != name else f"{name}_val"

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name = self.new(node.name)
        return self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.name = self.new(node.name)
        return self.generic_visit(node)

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg = self.new(node.arg)
        return node

    def visit_keyword(self, node: ast.keyword) -> ast.AST:
        return self.generic_visit(node)  # keyword names of library calls stay

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.new(node.id)
        return node


def meaningful_renames(source: str) -> str:
    """Every name of the program's own renamed by synonym; library names, builtins stay."""
    import builtins

    tree = ast.parse(source)
    keep = set(dir(builtins)) | {"self", "cls", "_"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            keep |= {a.asname or a.name.split(".")[0] for a in node.names}
    return ast.unparse(_MeaningfulRenamer(keep).visit(tree)) + "\n"


def with_comments(source: str) -> str:
    """A comment above every top-level statement and a header comment."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    starts = {min([s.lineno, *(d.lineno for d in getattr(s, "decorator_list", []))]) - 1
              for s in tree.body}
    out = ["# Solution for the task: see the method notes below.\n"]
    for index, line in enumerate(lines):
        if index in starts:
            out.append(f"# step {index}: what follows is part of the method\n")
        out.append(line)
    return "".join(out)


def with_layout(source: str) -> str:
    """The layout regenerated (one statement a line, standard spacing, no comments)."""
    return ast.unparse(ast.parse(source)) + "\n"


COSMETIC = {
    "renamed-short": lambda s: cosmetic_variant(s, "short"),
    "renamed-suffixed": lambda s: cosmetic_variant(s, "suffixed"),
    "reordered": lambda s: cosmetic_variant(s, "short", reorder=True),
    "meaningful-renames": meaningful_renames,
    "comments": with_comments,
    "layout": with_layout,
}


@functools.cache
def _known(task_id: str) -> dict[str, str]:
    """The task's known solutions' code, read once (the files do not change during the run)."""
    return known_code(get_task(task_id))


@functools.cache
def _known_comparable(task_id: str, name: str, backend: str) -> str:
    """A known solution's code as the back end compares it (`comparable`), made once."""
    return comparable(_known(task_id)[name], backend)


SOLUTIONS = [(task_id, name) for task_id in builtin_ids() for name in _known(task_id)]


@functools.cache
def _cosmetic_distances(task_id: str, name: str, backend: str) -> tuple[float, ...]:
    """A known solution's distances to its cosmetic variants (`COSMETIC`), as the back end sees
    them after dead-code removal, made once."""
    code = _known(task_id)[name]
    compare = make_backend(backend).distance
    live = _known_comparable(task_id, name, backend)
    return tuple(compare(live, comparable(transform(code), backend))
                 for transform in COSMETIC.values())


@pytest.fixture(scope="module")
def cosmetic():
    """`_cosmetic_distances`, shared: as a module fixture it puts the tests that compare against
    the cosmetic variants on one pytest-xdist worker (tests/conftest.py), which makes each known
    solution's variants and their distances once, not once per worker."""
    return _cosmetic_distances


def _ast_distance(a: str, b: str, strip: bool = True) -> float:
    if strip:
        a, b = comparable(a, "ast"), comparable(b, "ast")
    return StructuralBackend().distance(a, b)


def padding_figures(task_id: str, name: str, cosmetic_distances=_cosmetic_distances
                    ) -> dict[str, float]:
    """The ast distances of one known solution to its padded and cosmetic variants."""
    code = _known(task_id)[name]
    padded = _pad(code)
    live = _known_comparable(task_id, name, "ast")
    cosmetic = cosmetic_distances(task_id, name, "ast")
    return {"padded_before": _ast_distance(code, padded, strip=False),
            "padded_after": StructuralBackend().distance(live, comparable(padded, "ast")),
            "cosmetic_mean": float(np.mean(cosmetic)),
            "cosmetic_max": float(np.max(cosmetic))}


@pytest.mark.parametrize(("task_id", "name"), SOLUTIONS, ids=[f"{t}/{n}" for t, n in SOLUTIONS])
def test_padding_moves_a_known_solution_no_more_than_cosmetic_edits(task_id, name, capsys,
                                                                     cosmetic):
    figures = padding_figures(task_id, name, cosmetic)
    with capsys.disabled():
        print(f"\n{task_id}/{name}: " + ", ".join(f"{k} {v:.2f}" for k, v in figures.items()))
    assert figures["padded_before"] > figures["padded_after"]  # the padding was seen, and went
    assert figures["padded_after"] <= figures["cosmetic_mean"]


# An SLSQP circle packing as an agent writes it: one file, a main guard.
AGENT_SLSQP = textwrap.dedent('''
    import json
    import sys

    import numpy as np
    from scipy.optimize import minimize

    N = int(sys.argv[1]) if len(sys.argv) > 1 else 26


    def unpack(z):
        return z[:N], z[N:2 * N], z[2 * N:]


    def constraints(z):
        x, y, r = unpack(z)
        i, j = np.triu_indices(N, 1)
        gaps = (x[i] - x[j]) ** 2 + (y[i] - y[j]) ** 2 - (r[i] + r[j]) ** 2
        return np.concatenate([gaps, x - r, 1 - x - r, y - r, 1 - y - r])


    def solve(seed):
        rng = np.random.default_rng(seed)
        z0 = np.concatenate([rng.uniform(0.1, 0.9, 2 * N), np.full(N, 0.02)])
        bounds = [(0, 1)] * (2 * N) + [(0, 0.5)] * N
        res = minimize(lambda z: -z[2 * N:].sum(), z0, method="SLSQP", bounds=bounds,
                       constraints=[{"type": "ineq", "fun": constraints}],
                       options={"maxiter": 200})
        return res.x


    if __name__ == "__main__":
        x, y, r = unpack(solve(0))
        print(json.dumps({"circles": np.round(np.stack([x, y, r], 1), 6).tolist()}))
''')


def test_padding_an_agents_program_and_stripping_it():
    padded = _pad(AGENT_SLSQP)
    before = _ast_distance(AGENT_SLSQP, padded, strip=False)
    after = _ast_distance(AGENT_SLSQP, padded)
    cosmetic = {k: _ast_distance(AGENT_SLSQP, t(AGENT_SLSQP)) for k, t in COSMETIC.items()}
    mean = float(np.mean(list(cosmetic.values())))
    print(f"agent SLSQP program: padded {before:.2f} before, {after:.2f} after; cosmetic mean "
          f"{mean:.2f}, meaningful renames {cosmetic['meaningful-renames']:.2f}")
    assert before > 5 > mean >= after
    assert strip_dead_code(padded).strip() == AGENT_SLSQP.strip()


def test_the_stripped_program_runs_as_the_padded_one(tmp_path):
    padded = _pad(AGENT_SLSQP)
    outputs = []
    for name, text in (("padded", padded), ("stripped", strip_dead_code(padded))):
        path = tmp_path / f"{name}.py"
        path.write_text(text)
        run = subprocess.run([sys.executable, str(path), "4"], capture_output=True, text=True,
                             timeout=60, check=False)
        assert run.returncode == 0, run.stderr
        outputs.append(run.stdout)
    assert outputs[0] == outputs[1] and len(outputs[0]) > 20


def _defined(text: str) -> set[str]:
    """The names the module's top-level definitions bind."""
    names = set()
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {a.asname or a.name.split(".")[0] for a in node.names}
    return names


def _strip(source: str) -> str:
    return strip_dead_code(textwrap.dedent(source))


def test_the_main_guard_reaches_functions_that_reach_functions():
    stripped = _strip('''
        import os
        import sys

        def helper(x):
            return inner(x) + 1

        def inner(x):
            return x * 2

        def unused(x):
            return helper(x)

        def also_unused():
            return os.getcwd()

        if __name__ == "__main__":
            print(helper(int(sys.argv[1])))
    ''')
    assert _defined(stripped) == {"sys", "helper", "inner"}
    assert "unused" not in stripped and "os" not in stripped


def test_top_level_statements_are_roots_and_classes_reach_their_bases_and_methods_names():
    stripped = _strip('''
        def scale(v):
            return 2 * v

        def orphan():
            return Base()

        class Base:
            pass

        class Model(Base):
            def predict(self, v):
                return scale(v)

        class Unused(Base):
            pass

        result = Model().predict(3)
        print(result)
    ''')
    assert _defined(stripped) == {"scale", "Base", "Model", "result"}


def test_a_decorator_is_reached_and_a_registering_decorator_keeps_its_function():
    stripped = _strip('''
        import functools

        REGISTRY = {}

        def register(fn):
            REGISTRY[fn.__name__] = fn
            return fn

        def timed(fn):
            return fn

        @register
        def plugin():
            return 1

        @timed
        def used():
            return 2

        @timed
        def unused():
            return 3

        @functools.lru_cache(maxsize=None)
        def cached_unused(n):
            return n

        print(used(), REGISTRY)
    ''')
    # A decorator of the program's own may do anything (`register` fills REGISTRY), so the
    # functions it decorates stay, unused or not; `timed` is reached through them; an lru_cache'd
    # function nothing calls goes.
    assert _defined(stripped) == {"REGISTRY", "register", "plugin", "timed", "used", "unused"}
    assert "cached_unused" not in stripped and "functools" not in stripped


def test_globals_used_inside_functions_are_reached():
    stripped = _strip('''
        import numpy as np

        SIZE = 10
        UNUSED_SIZE = 20
        WEIGHTS = np.linspace(0, 1, SIZE)
        COUNTER = 0
        TABLE = {"a": 1}

        def bump():
            global COUNTER
            COUNTER += 1

        def total():
            bump()
            return float(WEIGHTS.sum()) + TABLE["a"]

        print(total())
    ''')
    assert _defined(stripped) == {"np", "SIZE", "WEIGHTS", "COUNTER", "TABLE", "bump", "total"}


def test_an_assignment_that_calls_something_of_unknown_effect_stays():
    stripped = _strip('''
        import random
        import time

        def log(message):
            print(message)
            return message

        SEEDED = random.seed(3)
        NOTE = log("started")
        PURE = max(1, 2)
        STARTED = time.time()  # reads a clock: no effect, goes
        print(random.random())
    ''')
    assert _defined(stripped) == {"random", "log", "SEEDED", "NOTE"}


def test_nested_functions_their_function_never_uses_go():
    stripped = _strip('''
        def solve(n):
            def step(x):
                return x + 1

            def never(x):
                return x - 1

            return step(n)

        print(solve(1))
    ''')
    assert "def step" in stripped and "never" not in stripped
    namespace = {}
    exec(stripped, namespace)  # still defines and runs


def test_unparsable_text_and_non_programs_come_back_unchanged():
    for text in ("def broken(:\n    pass\n", "Summary:\nanneal, then polish.\n", "", "   \n",
                 "x = 1; y = (\n"):
        assert strip_dead_code(text) == text


def test_a_library_without_a_root_and_dynamic_lookups_are_kept_whole():
    library = "def area(w, h):\n    return w * h\n\n\ndef helper():\n    return 1\n"
    assert strip_dead_code(library) == library  # nothing runs: its interface is unknown
    dynamic = ("def hidden():\n    return 1\n\n\nname = 'hid' + 'den'\n"
               "print(globals()[name]())\n")
    assert strip_dead_code(dynamic) == dynamic
    by_string = "import sys\n\n\ndef hidden():\n    return 1\n\n\n" \
                "print(getattr(sys.modules[__name__], 'hidden')())\n"
    assert strip_dead_code(by_string) == by_string


def test_layout_comments_future_imports_and_file_markers():
    text = textwrap.dedent('''\
        # file: helper.py
        def shared():
            return 1


        # a helper nobody calls
        # (two comment lines)
        def unused():
            return 2


        if __name__ == "__main__":  # an imported module's self-test: never runs
            print(unused())
        # file: main.py
        from __future__ import annotations

        import helper

        a = 1; b = 2  # one line, two statements


        def main():  # the entry
            return helper.shared()


        if __name__ == "__main__":
            print(main())
    ''')
    stripped = strip_dead_code(text)
    assert "unused" not in stripped and "nobody" not in stripped and "self-test" not in stripped
    assert stripped.count("# file:") == 2 and "from __future__" in stripped
    assert "def shared" in stripped  # reached as helper.shared, a module of the same program
    assert "a = 1; b = 2" in stripped and "# the entry" in stripped
    assert strip_dead_code(stripped) == stripped


def test_comparable_strips_for_every_code_back_end():
    padded = _pad(AGENT_SLSQP)
    for backend in ("ast", "tfidf", "embedding"):
        assert comparable(padded, backend) == comparable(AGENT_SLSQP, backend)
    assert math.isclose(StructuralBackend().distance(comparable(padded, "ast"),
                                                     comparable(AGENT_SLSQP, "ast")), 0.0)


def test_a_docstring_and_a_future_import_are_no_roots():
    module = '"""A module of helpers."""\n\nfrom __future__ import annotations\n\n\n' \
             'def helper() -> int:\n    return 1\n'
    assert strip_dead_code(module) == module  # nothing runs: a library, kept whole


def test_n_of_a_padded_program_is_that_of_the_program():
    from innolab.novelty.backends import Scorer
    from innolab.novelty.scoring import novelty_of_code

    task = get_task("circle-packing-26")
    scorer = Scorer(StructuralBackend())
    plain = novelty_of_code(AGENT_SLSQP, True, task, scorer)
    padded = novelty_of_code(_pad(AGENT_SLSQP), True, task, scorer)
    assert padded.distances == plain.distances and padded.novelty == plain.novelty > 0


def test_the_card_extractor_is_sent_only_the_live_code(tmp_path):
    from innolab.novelty.cards import extract_card
    from tests.fake_llm import FakeLLM

    with FakeLLM() as server:
        extract_card(_pad(AGENT_SLSQP), {"base_url": server.base_url, "model": "fake"})
        sent = server.requests[-1]["messages"][-1]["content"]
    assert "def solve(seed)" in sent and "fibonacci" not in sent and "RunningStats" not in sent


def test_lines_are_counted_as_python_counts_them():
    source = ('import os\n\n\ndef unused():\n    return "a\\x0cb\u2028c"  # \x0c form feed\n\n\n'
              'def used():\n    return 1\r\n\r\nprint(used())\n')
    assert strip_dead_code(source) == 'def used():\n    return 1\r\n\r\nprint(used())\n'


def test_a_comment_like_line_inside_a_string_stays():
    source = ('X = """a\n# part of the string"""\n# the helper\ndef unused():\n    pass\n\n\n'
              'print(X)\n')
    assert strip_dead_code(source) == 'X = """a\n# part of the string"""\nprint(X)\n'


# ------------------------------------------- padding reached only by code that never runs

from tests.padding import FORMS, applicable, pad  # noqa: E402


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("backend", ["ast", "tfidf"])
def test_padding_that_never_runs_moves_no_known_solution_more_than_cosmetic_edits(form, backend,
                                                                                  cosmetic):
    """Helpers called only under `if False:`, `if 0:`, a False constant, after a `return`, or
    classes made only under `if not True:`: within the cosmetic mean, on every known solution."""
    padded_any = 0
    compare = make_backend(backend).distance
    for task_id, name in SOLUTIONS:
        code = _known(task_id)[name]
        if not applicable(code, form):
            continue
        padded, _ = pad(code, form)
        padded_any += 1
        # D as the back end sees the two programs without dead-code removal, then with it (the
        # known solution's side of each made once: `_known_raw`, `_known_comparable`)
        raw = compare(_known_raw(task_id, name, backend), raw_form(padded, backend))
        after = compare(_known_comparable(task_id, name, backend), comparable(padded, backend))
        assert raw > after, f"{task_id}/{name}: the padding was not seen ({raw} vs {after})"
        assert after <= float(np.mean(cosmetic(task_id, name, backend))) + 1e-9, \
            f"{task_id}/{name} ({form}, {backend}): padded {after:.2f} > cosmetic mean"
    # after-return needs a function that returns: three one-script baselines have none
    assert padded_any >= (len(SOLUTIONS) - 3 if form == "after-return" else len(SOLUTIONS))


def raw_form(text: str, backend: str) -> str:
    """A program as the back end sees it without dead-code removal (the ast back end normalises
    itself; tfidf compares normalised code)."""
    from innolab.novelty.structure import normalise

    return text if backend == "ast" else normalise(text)


@functools.cache
def _known_raw(task_id: str, name: str, backend: str) -> str:
    return raw_form(_known(task_id)[name], backend)


def test_constant_branches_go_whole_and_live_blocks_take_their_place():
    stripped = _strip('''
        import sys

        DEBUG = False
        LIMIT = 3


        def helper():
            return 1


        def other():
            return 2


        def main():
            if DEBUG:
                helper()
            elif LIMIT > 2 and not DEBUG:
                print("live")
            else:
                other()
            if True:
                print("always")
            else:
                helper()
            while 0:
                other()
            return 0
            print("after the return")


        if __name__ == "__main__":
            sys.exit(main())
    ''')
    assert "helper" not in stripped and "other" not in stripped and "after the" not in stripped
    assert "DEBUG" not in stripped and "while" not in stripped
    assert 'if LIMIT > 2 and not DEBUG' not in stripped or "elif" not in stripped
    assert '    print("always")\n' in stripped  # unwrapped, one level up
    ast.parse(stripped)


def test_a_branch_a_name_rebound_anywhere_decides_stays():
    kept = _strip('''
        FLAG = False


        def helper():
            return 1


        def flip():
            global FLAG
            FLAG = True


        flip()
        if FLAG:
            print(helper())
    ''')
    assert "def helper" in kept  # FLAG is rebound: the branch may run


ELIF_CHAIN = textwrap.dedent('''
    def a():
        return 1


    def b():
        return 2


    if x > 5:
        out.append(a())
    elif False:
        out.append(b())
    else:
        out.append("rest")
''')


@pytest.mark.parametrize("x", [1, 7])
def test_an_elif_chain_keeps_its_meaning(x):
    stripped = strip_dead_code(ELIF_CHAIN)
    assert "def b" not in stripped and "def a" in stripped and "else:" in stripped
    ran: list = []
    exec(stripped, {"x": x, "out": ran})
    assert ran == [1 if x > 5 else "rest"]


def test_keep_executed_drops_what_never_ran():
    from innolab.novelty.deadcode import keep_executed

    source = textwrap.dedent('''\
        import json


        def used(x):
            if x > 10:
                raise ValueError(x)
            if json.loads("[]"):
                print("never")
            return x + 1


        def never(x):
            return x * 2


        class Box:
            def put(self, x):
                return used(x)

            def unused(self):
                return never(1)


        print(json.dumps(Box().put(1)))
    ''')
    lines = [1, 4, 5, 7, 9, 12, 16, 17, 18, 20, 24]  # as a line tracer records its run
    kept = keep_executed(source, lines)
    assert kept is not None
    assert "raise" not in kept and "def never" not in kept and "def unused" not in kept
    assert "def put" in kept and "return x + 1" in kept and "print(\"never\")" not in kept
    # an `if` that only evaluated a pure test goes whole (README); one whose test called
    # something of unknown effect ran that call, so it stays, its empty block holding `pass`
    assert "if x > 10" not in kept
    assert 'if json.loads("[]"):\n        pass' in kept
    assert keep_executed(source, []) is None  # nothing ran: the record cannot be right
    assert keep_executed("def broken(:\n", [1]) is None


def test_novelty_distance_says_which_rule_kept_the_code(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text(AGENT_SLSQP)
    b.write_text(pad(AGENT_SLSQP, "if-false")[0])
    cli = Path(sys.executable).parent / "innolab"
    done = subprocess.run([str(cli), "novelty", "distance", "--backend", "ast", str(a), str(b)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "dead code: static" in done.stderr
    assert float(done.stdout.strip().splitlines()[-1]) == 0.0


def test_code_that_never_runs_but_shapes_its_function_stays():
    """`if False: yield` keeps a generator a generator, a dead `global` keeps the name global,
    and a name bound in a dead branch stays local: each program prints as before stripping."""
    programs = {
        "generator": ("def nothing():\n    if False:\n        yield None\n\n\n"
                      "print(list(nothing()))\n"),
        "global": ("counter = 1\n\n\ndef bump():\n    if False:\n        global counter\n"
                   "    counter = 0\n\n\nbump()\nprint(counter)\n"),
        "local": ("x = 5\n\n\ndef read():\n    try:\n        return x\n    except NameError:\n"
                  "        return 'unbound'\n    if 0:\n        x = 1\n\n\n"
                  "try:\n    print(read())\nexcept UnboundLocalError:\n    print('local')\n"),
        "after return": ("def gen():\n    return\n    yield 1\n\n\nprint(list(gen()))\n"),
    }
    for name, source in programs.items():
        stripped = strip_dead_code(source)
        ran = {}
        for which, text in (("original", source), ("stripped", stripped)):
            done = subprocess.run([sys.executable, "-c", text], capture_output=True, text=True,
                                  timeout=60, check=False)
            ran[which] = (done.returncode, done.stdout, done.stderr.splitlines()[-1:])
        assert ran["original"] == ran["stripped"], (name, stripped)
    padded = "def f():\n    if False:\n        helper()\n    return 1\n\n\ndef helper():\n" \
             "    return 2\n\n\nprint(f())\n"
    assert "helper" not in strip_dead_code(padded)  # padding still goes
