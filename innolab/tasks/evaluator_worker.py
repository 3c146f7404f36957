"""The hidden evaluator's child process: `python -I -m innolab.tasks.evaluator_worker DIR FILE`."""

from __future__ import annotations

import json
import sys

from innolab.tasks import taskkit
from innolab.tasks.model import Task


def main() -> None:
    """Check the submission named on the command line; print its errors and score as JSON."""
    task = Task.load(sys.argv[1])
    errors, score = taskkit.check_file(task.spec.problem.check, task.problem_params, sys.argv[2],
                                       task.spec.limits.max_submission_bytes)
    print(json.dumps({"errors": errors, "score": score}))


if __name__ == "__main__":
    main()
