"""mini-swe-agent in a run: its DefaultAgent loop, its model on the gateway.

Its commands run in the run's sandbox through the run's `bash` tool (an `Environment` of innolab's).
"""

from __future__ import annotations

import os
import re
import signal
import sys
from typing import Any

from innolab.agents.frameworks._driver import (
    Tools,
    accepted,
    run_from_environment,
    write_counts,
)

DONE = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"  # mini-swe-agent's own end-of-task command
EXIT = re.compile(r"\[exit code (-?\d+)\]\s*$")
# what mini-swe-agent's templates read of the machine, asked of the sandbox (one `bash` call)
UNAME = "uname -s; uname -n; uname -r; uname -v; uname -m"
UNAME_FIELDS = ("system", "node", "release", "version", "machine")
# what its own count of model calls is: one cut by the run's end is begun, so counted
COUNTED_FROM = ("mini-swe-agent's DefaultAgent.n_calls: the model queries it began (counted "
                "before each is sent; the retries of one query count once)")


class SandboxEnvironment:
    """mini-swe-agent's Environment protocol over the run's MCP tools.

    Each command is the run's `bash` tool (a step of the run loop). mini-swe-agent's own end
    (`echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`) submits submission.json with the run's `submit`
    tool and ends the agent only once that submission is accepted.
    """

    def __init__(self, tools: Tools) -> None:
        self.tools = tools
        self.config: dict[str, Any] = {}
        self._uname: dict[str, str] | None = None

    def execute(self, action: dict, cwd: str = "", *, timeout: int | None = None) -> dict:
        """Run one command in the run's sandbox (or submit, at mini-swe-agent's end)."""
        from minisweagent.exceptions import Submitted

        command = action.get("command", "") if isinstance(action, dict) else str(action)
        if command.strip().split("&&")[0].strip() in (f"echo {DONE}", DONE):
            text, _ = self.tools.call("submit", {"path": "submission.json"})
            if accepted(text):
                raise Submitted({"role": "exit", "content": text,
                                 "extra": {"exit_status": "Submitted", "submission": text}})
            return {"output": text + "\nNot done yet: make submission.json valid first.",
                    "returncode": 1, "exception_info": ""}
        arguments: dict[str, Any] = {"command": command}
        if timeout:
            arguments["timeout"] = timeout
        text, failed = self.tools.call("bash", arguments)
        found = EXIT.search(text)
        code = int(found.group(1)) if found else (1 if failed else 0)
        return {"output": EXIT.sub("", text), "returncode": code,
                "exception_info": text if failed else ""}

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        """What mini-swe-agent's templates read of the environment: the sandbox's `uname`.

        Asked once, of the sandbox itself (a `bash` call: a step of the run), so that a Docker
        runtime's container is described, not the machine the framework runs on.
        """
        if self._uname is None:
            text, _ = self.tools.call("bash", {"command": UNAME})
            lines = EXIT.sub("", text).strip().splitlines()
            self._uname = {**dict.fromkeys(UNAME_FIELDS, "unknown"),
                           **dict(zip(UNAME_FIELDS, (line.strip() for line in lines),
                                      strict=False))}
        return {**self._uname, **kwargs}

    def serialize(self) -> dict:
        """The environment as mini-swe-agent saves it with a trajectory."""
        return {"info": {"config": {"environment_type": "innolab.sandbox"}}}


def main() -> None:
    """Run the default agent with its default config on the task."""
    import yaml
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.config import builtin_config_dir
    from minisweagent.models.litellm_model import LitellmModel

    run = run_from_environment()
    config = yaml.safe_load((builtin_config_dir / "mini.yaml").read_text())
    agent_config = {**config.get("agent", {}), "step_limit": int(run.options.get("step_limit",
                                                                                 200)),
                    "cost_limit": 0.0}
    model = LitellmModel(model_name=f"openai/{run.model}", cost_tracking="ignore_errors",
                         model_kwargs={"api_base": run.base_url, "api_key": run.key,
                                       **(config.get("model", {}).get("model_kwargs") or {})})
    tools = Tools(run)
    agent = DefaultAgent(model, SandboxEnvironment(tools), **agent_config)

    def stopped(*_: Any) -> None:
        """At innolab's SIGTERM (the run's end): its count written, then gone at once.

        mini-swe-agent retries a model query on any exception, SystemExit among them
        (tenacity), so the SystemExit innolab's SIGTERM raises elsewhere would be retried here
        until SIGKILL, and no count would be written.
        """
        write_counts(agent.n_calls, counted_from=COUNTED_FROM)
        for stream in (sys.stdout, sys.stderr):  # its log, whole (the MCP session ends with it)
            stream.flush()
        os._exit(143)

    signal.signal(signal.SIGTERM, stopped)
    try:
        agent.run(run.task)
    finally:
        write_counts(agent.n_calls, counted_from=COUNTED_FROM)
        tools.close()


if __name__ == "__main__":
    main()
