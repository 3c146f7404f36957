"""`python -m innolab.cli`: the `innolab` command."""

from innolab.cli import main

raise SystemExit(main())
