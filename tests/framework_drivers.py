"""Framework drivers for the bridge's tests: one that raises after a tool call, one that hangs.

Run as `python -m tests.framework_drivers crash|hang` is not how the bridge starts a driver: each
behaviour is its own module entry below (the bridge runs `python -m <driver>`).
"""

from __future__ import annotations

import sys
import time

from innolab.agents.frameworks._driver import Tools, run_from_environment


def crash() -> None:
    """Write a candidate and submit it through the run's tools, then raise."""
    tools = Tools(run_from_environment())
    grid = ("[[{x}, {y}, {r}] for k in range(5) for c in range(6)][:26]"
            .format(x="(2 * c + 1) / 12", y="(2 * k + 1) / 12", r="1 / 12 * (1 - 1e-12)"))
    tools.call("python_session", {"code": f"import json\njson.dump({{'circles': {grid}}}, "
                                           "open('submission.json', 'w'))"})
    tools.call("submit", {"path": "submission.json"})
    raise RuntimeError("boom: the framework failed after submitting")


def hang() -> None:
    """One tool call, then wait (a run's budget ends it, or a kill)."""
    tools = Tools(run_from_environment())
    tools.call("bash", {"command": "echo started"})
    while True:
        time.sleep(1)


if __name__ == "__main__":
    {"crash": crash, "hang": hang}[sys.argv[1] if len(sys.argv) > 1 else "crash"]()
