"""Every figure README cites from a benchmark is the one its committed output holds.

README cites a measured figure as a link into the benchmark's output file,
`[7.0 ms](results/bench/bench_gym.json#local_tool_call_ms)` (tests/benchmarks/record.py): the number
shown must be the file's value at the precision shown, and every benchmark has its file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.benchmarks import record

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
CITATION = re.compile(r"\[([^\]]+)\]\((results/bench/[\w.-]+\.json)#([^)\s]+)\)")
NUMBER = re.compile(r"[-−+]?\d[\d,]*(?:\.\d+)?(?:e[-−+]?\d+)?")


def citations() -> list[tuple[str, str, str]]:
    return CITATION.findall(README)


def shown(text: str) -> tuple[float, int, bool]:
    """The first number a link's text shows, its decimals, and whether it is written as m.de±x."""
    match = NUMBER.search(text)
    assert match, f"the citation {text!r} shows no number"
    digits = match.group(0).replace(",", "").replace("−", "-")
    mantissa, _, _ = digits.partition("e")
    return float(digits), len(mantissa.partition(".")[2]), "e" in digits


def as_shown(value: float, decimals: int, scientific: bool) -> float:
    """A value written as README writes it: rounded to its decimals (of the mantissa)."""
    return float(f"{value:.{decimals}e}") if scientific else round(value, decimals)


def test_readme_cites_benchmark_figures():
    assert len(citations()) >= 10, "README cites its measured figures as links into results/bench"


@pytest.mark.parametrize(("text", "path", "key"), citations(),
                         ids=[f"{p.split('/')[-1]}#{k}" for _, p, k in citations()])
def test_a_cited_figure_is_the_committed_outputs(text, path, key):
    data = json.loads((ROOT / path).read_text(encoding="utf-8"))
    value = record.figure(data, key)
    assert isinstance(value, int | float) and not isinstance(value, bool), (key, value)
    number, decimals, scientific = shown(text)
    assert as_shown(float(value), decimals, scientific) == pytest.approx(number, rel=1e-9,
                                                                        abs=1e-12), \
        f"README shows {text!r} for {path}#{key}, the file holds {value!r}"


def test_every_benchmark_has_its_committed_output():
    names = sorted(p.stem for p in (ROOT / "tests" / "benchmarks").glob("bench_*.py"))
    for name in names:
        path = ROOT / "results" / "bench" / f"{name}.json"
        assert path.is_file(), f"{name} has no committed output (make bench writes {path.name})"
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["benchmark"] == name and data["commit"] and data["figures"]
        assert data["machine"]["cores"] and data["date"]
        # a committed figure comes from a clean tree on the benchmark's default settings
        assert data["dirty"] is False, f"{path.name} was written from a tree with changes"
        assert data["settings"] == {}, f"{path.name} ran with settings {data['settings']}"


def test_a_benchmark_run_writes_its_figures_with_where_they_were_made(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "tests/benchmarks/run.py", "--only", "bench_viewer",
                           "--quick", "--output", str(tmp_path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads((tmp_path / "bench_viewer.json").read_text())
    assert data["settings"] == {"steps": 200} and data["figures"]
    assert set(data["machine"]) >= {"cores", "load_start", "load_end", "python", "docker"}
    assert len(data["commit"]) == 40 and isinstance(data["dirty"], bool)
