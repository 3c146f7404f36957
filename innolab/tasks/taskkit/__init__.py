"""Strict submission checks of innolab's tasks: a standalone package (numpy only), in sandboxes too.

`core` holds what every problem shares (strict parsing, shape and range checks, the validator
command line); each problem family's checks live in a module of their own (`circles`, `points`,
`steps`, `kissing`, `jobshop`), and a task names its check as "module:function" in task.yaml (as
MLE-bench's competitions name their grade function). A sandbox receives this package's `__init__`,
`core` and the task's own family module only.
"""

from .core import (
    DEFAULT_MAX_BYTES,
    FAMILIES,
    Invalid,
    check,
    check_file,
    load_submission,
    main,
    main_from_config,
    parse_submission,
    resolve,
)

__all__ = ["DEFAULT_MAX_BYTES", "FAMILIES", "Invalid", "check", "check_file", "load_submission",
           "main", "main_from_config", "parse_submission", "resolve"]
