"""Runs every benchmark (`make bench`): each prints its figures as ratios measured in one run."""

import importlib.util
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here.parent.parent))
for path in sorted(here.glob("bench_*.py")):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    print(f"== {path.stem}")
    module.main()
