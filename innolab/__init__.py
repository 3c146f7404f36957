"""innolab: measure the innovation potential of AI agents (gain and novelty, after InnoGym)."""

import sys

__version__ = "0.1.0"

# nbformat (papermill's, every notebook innolab executes) imports jsonschema, whose optional checker
# of the "iri" formats, rfc3987-syntax (pulled in by jsonschema[format-nongpl]), compiles some 35
# Earley grammars as it is imported: 0.9 s of CPU in each process that loads nbformat (a sweep's
# driver and each of its workers, each notebook worker of `innolab reproduce`). No notebook schema
# has an iri format: innolab's processes go without that checker (python-jsonschema/jsonschema
# #1428); a process that imported it before innolab keeps it.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
