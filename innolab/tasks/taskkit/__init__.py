"""Strict submission checks of innolab's tasks: a standalone package (numpy only), in sandboxes too.

`core` holds what every problem shares (strict parsing, shape and range checks, the validator
command line); each problem family's checks live in a module of their own, and a task names its
check as "module:function" in task.yaml (as MLE-bench's competitions name their grade function).
The built-in families' modules lie here (`circles`, `points`, `steps`, `kissing`, `jobshop`,
`prediction`, `colouring`); other families come from installed distributions or a task's own
folder (innolab.tasks.families, the one registry). A family module imports the numeric libraries
and this package's core only (`from .core import ...`), so that it runs unchanged in a sandbox,
where this package's `__init__`, `core` and the task's own family module are all there is.
"""

from .core import (
    DEFAULT_MAX_BYTES,
    Invalid,
    check,
    check_file,
    load_submission,
    main,
    main_from_config,
    parse_submission,
    resolve,
    run_check,
    split_reference,
)

__all__ = ["DEFAULT_MAX_BYTES", "Invalid", "check", "check_file", "load_submission", "main",
           "main_from_config", "parse_submission", "resolve", "run_check", "split_reference"]
