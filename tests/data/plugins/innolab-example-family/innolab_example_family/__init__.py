"""A third party's problem families for innolab's registry (entry-point group innolab.families).

`sidon`: Sidon sets (integers below N whose pairwise sums are all distinct; maximise their
number), with a search template for innolab's baseline. `bare`: the same check under another
name, with no template (the baseline refuses its tasks, naming the family). The checks modules are
files beside this one: innolab loads them by file and copies them into its sandboxes, so they
import numpy and taskkit's core only.
"""

from pathlib import Path

from innolab.tasks.families import FamilySpec

HERE = Path(__file__).resolve().parent

SIDON = FamilySpec("sidon", HERE / "sidon.py", baseline=HERE / "sidon_search.py",
                   description="Sidon sets: distinct pairwise sums, as many elements as possible")
BARE = FamilySpec("bare", HERE / "bare.py",
                  description="Sidon sets again, without a baseline template")
