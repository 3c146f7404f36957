"""A module that exits when imported (as a script written to run, not to be imported, may)."""

raise SystemExit(3)
