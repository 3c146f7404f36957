"""The hidden evaluator's worker: `python -I -m innolab.tasks.evaluator_worker DIR FILE MODULE`.

MODULE is the task's family module file: the worker starts isolated (`-I`), so it does not read
the caller's path, where a family's distribution may lie; it is told where the family's checks are.
"""

from __future__ import annotations

import json
import sys

from innolab.tasks import families, taskkit
from innolab.tasks.model import Task


def main() -> None:
    """Check the submission named on the command line; print its errors and score as JSON."""
    module = sys.argv[3] if len(sys.argv) > 3 else None
    task = Task.load(sys.argv[1], family_module=module)
    try:
        data = taskkit.load_submission(sys.argv[2], task.spec.limits.max_submission_bytes)
    except taskkit.Invalid as error:
        print(json.dumps({"errors": [str(error)], "score": None}))
        return
    errors, score = families.check_data(task.family, task.spec.problem.function,
                                        task.problem_params, data)
    print(json.dumps({"errors": errors, "score": score}))


if __name__ == "__main__":
    main()
