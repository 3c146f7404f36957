"""Sweeps of agent runs: a YAML spec expanded into configurations, each run executed on Dask."""

from innolab.sweep.engine import finished, plan, reference_sweep, run, status
from innolab.sweep.spec import (
    Configuration,
    RunFields,
    SpecError,
    SweepSpec,
    expand,
    load_spec,
    parse_spec,
    spec_class,
)

__all__ = [
    "Configuration",
    "RunFields",
    "SpecError",
    "SweepSpec",
    "expand",
    "finished",
    "load_spec",
    "parse_spec",
    "plan",
    "reference_sweep",
    "run",
    "spec_class",
    "status",
]
