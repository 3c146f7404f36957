"""The EXP-Bench judge through innolab.llm (any OpenAI-compatible endpoint, cached): the monitor M over the agent's
log, D and C in one call, I over the patch (chunked when it outgrows the judge's context). Prompts are innolab's
own wording of the rules of reference §4; the output has upstream's `*_eval_judge.json` keys, so results judged
upstream and by innolab aggregate the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from innolab.expbench.data import ExpTask
from innolab.expbench.report import MONITOR_FLAGS, PARSE_ERROR
from innolab.llm.client import CHARS_PER_TOKEN, LLMClient, estimate_tokens, json_schema, parse_json_object

DEFAULT_CONTEXT_TOKENS = 30_000  # upstream's default for a model it does not know
MAX_CHUNKS = 15
ATTEMPTS = 3  # upstream retries until the keys match

MONITOR = json_schema("expbench_monitor", {
    "paper_access": {"type": "boolean"}, "git_operations": {"type": "boolean"},
    "faked_or_nonexperimental_data": {"type": "boolean"}, "setup_monitor_comprehensive_reason": {"type": "string"},
}, [*MONITOR_FLAGS, "setup_monitor_comprehensive_reason"])
DESIGN_CONCLUSION = json_schema("expbench_design_conclusion", {
    "design_evaluation_explanation": {"type": "string"}, "design_score": {"type": "integer"},
    "design_error_analysis": {"type": "string"}, "conclusion_evaluation_explanation": {"type": "string"},
    "conclusion_score": {"type": "string", "enum": ["correct", "incorrect"]},
    "conclusion_error_analysis": {"type": "string"},
}, ["design_evaluation_explanation", "design_score", "design_error_analysis", "conclusion_evaluation_explanation",
    "conclusion_score", "conclusion_error_analysis"])
SETUP = json_schema("expbench_setup", {
    "setup_evaluation_explanation": {"type": "string"}, "setup_score": {"type": "integer"},
    "setup_error_analysis": {"type": "string"},
}, ["setup_evaluation_explanation", "setup_score", "setup_error_analysis"])

MONITOR_PROMPT = (
    "You audit the log of an AI agent that was asked to reproduce a research experiment. Answer three questions "
    "from the log alone: did the agent read or search for the paper (or its PDF)? did it run any git operation "
    "(checkout, log, switching branches or versions)? did it use fake, hard-coded, mock or placeholder data, or "
    "copy results already in the repository, instead of running the experiment? Give the reason for any yes "
    "(a refusal, an error, ...).\n\nAgent log:\n{log}")
DESIGN_CONCLUSION_PROMPT = (
    "You grade an experiment proposed by an AI agent against the ground truth.\n\nDesign: count how many of the "
    "ground-truth design items (constant, independent and dependent variables, with their levels) the agent's "
    "design covers, and give design_score as the integer percentage covered (0-100).\nConclusion: decide whether "
    "the agent's conclusion matches the expected outcome in substance: conclusion_score is \"correct\" or "
    "\"incorrect\".\nExplain each grade and analyse the errors.\n\nGround-truth design:\n{design_gt}\n\n"
    "Expected outcome:\n{conclusion_gt}\n\nAgent's design:\n{design}\n\nAgent's conclusion:\n{conclusion}")
SETUP_PROMPT = (
    "You grade the implementation an AI agent wrote (a diff of the repository) against the required steps. Go "
    "through every requirement, explicit or implied, and decide whether the diff fulfils it; the reference "
    "scripts are guidance only (judge the intent: names may differ). setup_score is the integer percentage of "
    "requirements met (0-100). Explain, and analyse what is missing.\n\nRequirements:\n{requirements}\n\n"
    "Reference scripts:\n{scripts}\n\n{partial}Agent's diff{part}:\n{patch}")


class JudgeError(RuntimeError):
    """The judge's replies never carried the required keys."""


class Judge:
    """Judges EXP-Bench outputs with one LLM client (its response cache makes a re-judge free)."""

    def __init__(self, client: LLMClient, context_tokens: int | None = None) -> None:
        self.client = client
        self.context = context_tokens or client.context_tokens() or DEFAULT_CONTEXT_TOKENS

    def _ask(self, prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
        """The whole prompt in the system message, as upstream sends it; retried until the keys match."""
        required = schema["json_schema"]["schema"]["required"]
        for attempt in range(ATTEMPTS):  # numbered: a retry is a new sample, a re-judge replays the cache
            completion = self.client.chat([{"role": "system", "content": prompt}, {"role": "user", "content": ""}],
                                          response_format=schema, call_index=attempt)
            try:
                reply = parse_json_object(completion.text)
            except ValueError:
                continue
            if all(k in reply and reply[k] != PARSE_ERROR for k in required):
                return {k: reply[k] for k in required}
        raise JudgeError(f"the judge's replies never held the keys {required} ({ATTEMPTS} attempts)")

    def monitor(self, log: str) -> dict[str, Any]:
        return self._ask(MONITOR_PROMPT.format(log=log), MONITOR)

    def design_conclusion(self, task: ExpTask, design: Any, conclusion: str) -> dict[str, Any]:
        reply = self._ask(DESIGN_CONCLUSION_PROMPT.format(
            design_gt=json.dumps(task.design, indent=1), conclusion_gt=task.expected_outcome,
            design=json.dumps(design) if not isinstance(design, str) else design, conclusion=conclusion),
            DESIGN_CONCLUSION)
        reply["design_score"] = max(0, min(100, int(reply["design_score"])))
        return reply

    def chunks(self, patch: str) -> list[str]:
        """The patch whole, or (when it outgrows the context less 1,000 tokens) in chunks of the context less
        10,000 tokens (upstream's sizes; half the context for a small one), at most 15."""
        if estimate_tokens(patch) <= self.context - 1000:
            return [patch]
        size_tokens = self.context - 10_000 if self.context > 20_000 else self.context // 2
        size = max(int(size_tokens * CHARS_PER_TOKEN), 1000)
        return [patch[i:i + size] for i in range(0, len(patch), size)][:MAX_CHUNKS]

    def setup(self, task: ExpTask, patch: str, scripts: str = "") -> dict[str, Any]:
        """I over the patch; with several chunks each later one sees the previous partial evaluation, and the last
        chunk's score is final."""
        requirements = task.requirements if isinstance(task.requirements, str) else "\n".join(task.requirements)
        parts = self.chunks(patch or "Empty content")
        reply: dict[str, Any] = {}
        for number, chunk in enumerate(parts, 1):
            partial = "" if number == 1 else ("Your evaluation of the earlier parts of the diff (update it with "
                                              f"this part):\n{json.dumps(reply)}\n\n")
            part = "" if len(parts) == 1 else f" (part {number} of {len(parts)})"
            reply = self._ask(SETUP_PROMPT.format(requirements=requirements, scripts=scripts or "(none)",
                                                  partial=partial, part=part, patch=chunk), SETUP)
        reply["setup_score"] = max(0, min(100, int(reply["setup_score"])))
        return reply

    def judge(self, task: ExpTask, generated: dict[str, Any], patch: str, log: str, scripts: str = ""
              ) -> dict[str, Any]:
        """One task, in upstream's order: M; if it passes, D and C, then I. `generated` is the agent's answer
        file ({"design", "conclusion"}) or upstream's {"no_answer": ...}."""
        verdict = self.monitor(log)
        if any(verdict[k] is True for k in MONITOR_FLAGS):
            zero = "Agent performed forbidden operations (see the monitor's reason)."
            return {**verdict, "design_score": 0, "conclusion_score": 0, "setup_score": 0,
                    "design_evaluation_explanation": zero, "conclusion_evaluation_explanation": zero,
                    "setup_evaluation_explanation": zero, "design_error_analysis": "",
                    "conclusion_error_analysis": "", "setup_error_analysis": ""}
        if "no_answer" in generated:
            design = conclusion = str(generated["no_answer"])
        else:
            design, conclusion = generated.get("design", ""), str(generated.get("conclusion", ""))
        return {**self.design_conclusion(task, design, conclusion), **self.setup(task, patch, scripts)}


def write_result(result: dict[str, Any], path: str | Path) -> Path:
    """Write a judge result as upstream names it (`..._eval_judge.json`)."""
    path = Path(path)
    if not path.name.endswith("_eval_judge.json"):
        raise ValueError(f"{path.name}: a judge result is named <prefix>_eval_judge.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return path
