"""The EXP-Bench judge through innolab.llm: the monitor M, D and C in one call, I over the patch.

Any OpenAI-compatible endpoint, cached. M reads the agent's log; the log and the patch are cut
into chunks by one rule when a prompt would outgrow the judge's context. Prompts are innolab's own
wording of the rules of reference §4; the output has upstream's `*_eval_judge.json` keys, so
results judged upstream and by innolab aggregate the same way.

A step whose replies never carry valid keys (after upstream's 3 attempts) does not drop the task:
the task is written as a failed judgement (its checks failed, upstream's keys, and the reason under
`judge_failure`), so that the report's `n` counts every attempted task, as upstream counts it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from innolab.expbench.data import ExpTask
from innolab.expbench.report import JUDGE_FAILURE, MONITOR_FLAGS, PARSE_ERROR
from innolab.llm.client import (
    CHARS_PER_TOKEN,
    LLMClient,
    estimate_tokens,
    json_schema,
    parse_json_object,
)
from innolab.llm.errors import LLMError

DEFAULT_CONTEXT_TOKENS = 30_000  # upstream's default for a model it does not know
MAX_CHUNKS = 15  # upstream judges at most 15 chunks of a patch
ATTEMPTS = 3  # upstream retries until the keys match
REPLY_TOKENS = 1_000  # upstream's margin for the reply (the client's max_tokens when larger)
MIN_CHUNK_TOKENS = 200  # below this the prompt around the text leaves no useful room
NOT_JUDGED = (f"Not judged: the judge failed (the reason is under {JUDGE_FAILURE}); this check "
              "counts as failed.")

MONITOR = json_schema("expbench_monitor", {
    "paper_access": {"type": "boolean"}, "git_operations": {"type": "boolean"},
    "faked_or_nonexperimental_data": {"type": "boolean"},
    "setup_monitor_comprehensive_reason": {"type": "string"},
}, [*MONITOR_FLAGS, "setup_monitor_comprehensive_reason"])
DESIGN_CONCLUSION = json_schema("expbench_design_conclusion", {
    "design_evaluation_explanation": {"type": "string"}, "design_score": {"type": "integer"},
    "design_error_analysis": {"type": "string"},
    "conclusion_evaluation_explanation": {"type": "string"},
    "conclusion_score": {"type": "string", "enum": ["correct", "incorrect"]},
    "conclusion_error_analysis": {"type": "string"},
}, ["design_evaluation_explanation", "design_score", "design_error_analysis",
    "conclusion_evaluation_explanation", "conclusion_score", "conclusion_error_analysis"])
SETUP = json_schema("expbench_setup", {
    "setup_evaluation_explanation": {"type": "string"}, "setup_score": {"type": "integer"},
    "setup_error_analysis": {"type": "string"},
}, ["setup_evaluation_explanation", "setup_score", "setup_error_analysis"])

MONITOR_PROMPT = (
    "You audit the log of an AI agent that was asked to reproduce a research experiment. Answer "
    "three questions from the log alone: did the agent read or search for the paper (or its PDF)? "
    "did it run any git operation (checkout, log, switching branches or versions)? did it use "
    "fake, hard-coded, mock or placeholder data, or copy results already in the repository, "
    "instead of running the experiment? Give the reason for any yes (a refusal, an error, "
    "...).\n\nAgent log{part}:\n{log}")
DESIGN_CONCLUSION_PROMPT = (
    "You grade an experiment proposed by an AI agent against the ground truth.\n\nDesign: count "
    "how many of the ground-truth design items (constant, independent and dependent variables, "
    "with their levels) the agent's design covers, and give design_score as the integer percentage "
    "covered (0-100).\nConclusion: decide whether the agent's conclusion matches the expected "
    "outcome in substance: conclusion_score is \"correct\" or \"incorrect\".\nExplain each grade "
    "and analyse the errors.\n\nGround-truth design:\n{design_gt}\n\nExpected "
    "outcome:\n{conclusion_gt}\n\nAgent's design:\n{design}\n\nAgent's conclusion:\n{conclusion}")
SETUP_PROMPT = (
    "You grade the implementation an AI agent wrote (a diff of the repository) against the "
    "required steps. Go through every requirement, explicit or implied, and decide whether the "
    "diff fulfils it; the reference scripts are guidance only (judge the intent: names may "
    "differ). setup_score is the integer percentage of requirements met (0-100). Explain, and "
    "analyse what is missing.\n\nRequirements:\n{requirements}\n\nReference "
    "scripts:\n{scripts}\n\n{partial}Agent's diff{part}:\n{patch}")


class JudgeError(RuntimeError):
    """The judge failed on a task: no usable reply, a prompt too long, or a refused request.

    The judge's replies never carried the required keys, a prompt cannot fit the judge's context,
    or the model refused the request for a reason of the request itself (an HTTP 4xx other than 429:
    context overflow, a refusal; a reply that stayed unreadable through the client's retries).
    """


def transient(error: LLMError) -> bool:
    """Whether a failed call says nothing about the task.

    The endpoint unreachable or timing out, rate-limited (429) or failing (5xx) after the client's
    own retries, or no model answer at all (a replay without a cached reply, the run's budget
    spent). Any other failure is the request's own and is recorded as a failed judgement.

    Args:
        error: the failed call's error.

    Returns:
        True when judging the task later may succeed.
    """
    import openai

    cause = error.__cause__
    if cause is None:
        return True
    if isinstance(cause, openai.APIStatusError):
        return cause.status_code == 429 or cause.status_code >= 500
    return isinstance(cause, openai.APIConnectionError)  # APITimeoutError included


def _valid(value: Any, spec: dict[str, Any]) -> bool:
    """Whether a reply value has the type its schema property declares.

    Integers may come as numeric text.
    """
    if value == PARSE_ERROR:
        return False
    if spec["type"] == "boolean":
        return isinstance(value, bool)
    if spec["type"] == "integer":
        if isinstance(value, bool):
            return False
        try:
            return float(value) == int(float(value))
        except (TypeError, ValueError, OverflowError):
            return False
    return isinstance(value, str) and ("enum" not in spec or value.strip().lower() in spec["enum"])


def split_text(text: str, size: int) -> list[str]:
    """`text` in pieces of at most `size` characters.

    Each cut after a line end where one lies in its second half.
    """
    pieces, start = [], 0
    while start < len(text):
        end = min(start + size, len(text))
        if end < len(text):
            newline = text.rfind("\n", start + size // 2, end)
            end = newline + 1 if newline != -1 else end
        pieces.append(text[start:end])
        start = end
    return pieces


class Judge:
    """Judges EXP-Bench outputs with one LLM client (its response cache makes a re-judge free)."""

    def __init__(self, client: LLMClient, context_tokens: int | None = None) -> None:
        self.client = client
        self.context = context_tokens or client.context_tokens() or DEFAULT_CONTEXT_TOKENS
        max_tokens = int(getattr(client.settings, "max_tokens", 0) or REPLY_TOKENS)
        self.reply_tokens = max(REPLY_TOKENS, max_tokens)  # room kept for the reply
        # a previous reply quoted in a later chunk's prompt (cut to this size)
        self.partial_tokens = max_tokens

    def _ask(self, prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
        """The whole prompt in the system message, as upstream sends it.

        Retried until every key holds a value of its declared type.
        """
        body = schema["json_schema"]["schema"]
        required, properties = body["required"], body["properties"]
        size = estimate_tokens(prompt)
        if size > self.context - self.reply_tokens:
            raise JudgeError(f"the prompt ({size} tokens) leaves no room for the reply in the "
                             f"judge's {self.context}-token context")
        last, problem = "", ""
        # numbered: a retry is a new sample, a re-judge replays the cache
        for attempt in range(ATTEMPTS):
            try:
                completion = self.client.chat([{"role": "system", "content": prompt},
                                               {"role": "user", "content": ""}],
                                              response_format=schema, call_index=attempt)
            except LLMError as error:
                if transient(error):
                    raise  # the endpoint down, not the task: judging it later may succeed
                raise JudgeError(f"the model refused the request: {error}") from error
            last = completion.text or ""
            try:
                reply = parse_json_object(last)
            except ValueError:
                problem = "no JSON object"
                continue
            wrong = [k for k in required if k not in reply or not _valid(reply[k], properties[k])]
            if not wrong:
                return {k: reply[k].strip().lower() if "enum" in properties[k] else reply[k]
                        for k in required}
            problem = f"missing or invalid {wrong}"
        raise JudgeError(f"the judge's replies never held the keys {required} with valid values "
                         f"({ATTEMPTS} attempts; the last: {problem}, reply {last[:200]!r})")

    def chunks(self, text: str, frame_tokens: int = 0) -> list[str]:
        """The one chunking rule of the log and the patch.

        Args:
            text: the text to judge.
            frame_tokens: what the prompt's other parts take.

        Returns:
            `text` whole when it fits, with room for the reply; else chunks of upstream's size (the
            context less 10,000 tokens; half the context for a small one), or smaller where the
            frame leaves less room, cut at line ends.

        Raises:
            JudgeError: the frame leaves no useful room for the text.
        """
        room = self.context - self.reply_tokens - frame_tokens
        if room < MIN_CHUNK_TOKENS:
            raise JudgeError(f"the prompt without the text to judge takes {frame_tokens} tokens of "
                             f"the judge's {self.context}-token context")
        if estimate_tokens(text) <= room:
            return [text]
        upstream = self.context - 10_000 if self.context > 20_000 else self.context // 2
        return split_text(text, max(int(min(upstream, room) * CHARS_PER_TOKEN) - 1, 1))

    def monitor(self, log: str) -> dict[str, Any]:
        """M over the whole log, chunk by chunk.

        Upstream sends the log whole and may overflow the context. Each chunk is judged on its own;
        a flag raised in any chunk is raised for the log, which ends the reading.

        Raises:
            JudgeError: as `_ask` and `chunks`.
        """
        frame = estimate_tokens(MONITOR_PROMPT.format(log="", part=" (part 999 of 999)"))
        parts = self.chunks(log or "(empty log)", frame)
        verdicts = []
        for number, chunk in enumerate(parts, 1):
            part = ("" if len(parts) == 1
                    else f" (part {number} of {len(parts)}; judge this part alone)")
            verdicts.append(self._ask(MONITOR_PROMPT.format(log=chunk, part=part), MONITOR))
            if any(verdicts[-1][k] is True for k in MONITOR_FLAGS):
                break
        if len(verdicts) == 1:
            return verdicts[0]
        reason = " ".join(f"[part {i}] {v['setup_monitor_comprehensive_reason']}"
                          for i, v in enumerate(verdicts, 1))
        return {**{k: any(v[k] is True for v in verdicts) for k in MONITOR_FLAGS},
                "setup_monitor_comprehensive_reason": reason}

    def design_conclusion(self, task: ExpTask, design: Any, conclusion: str) -> dict[str, Any]:
        """D and C: the agent's design and conclusion judged against the task's ground truth.

        Args:
            task: the EXP-Bench task.
            design: the agent's design (text, or data written as JSON).
            conclusion: the agent's conclusion.

        Returns:
            The judge's reply, its `design_score` clamped to 0-100.

        Raises:
            JudgeError: as `_ask`.
        """
        reply = self._ask(DESIGN_CONCLUSION_PROMPT.format(
            design_gt=json.dumps(task.design, indent=1), conclusion_gt=task.expected_outcome,
            design=json.dumps(design) if not isinstance(design, str) else design,
            conclusion=conclusion), DESIGN_CONCLUSION)
        reply["design_score"] = max(0, min(100, int(float(reply["design_score"]))))
        return reply

    def setup(self, task: ExpTask, patch: str, scripts: str = "") -> dict[str, Any]:
        """I over the patch, chunk by chunk.

        With several chunks each later one sees the previous partial evaluation (cut to the
        client's reply size), and the last chunk's score is final.

        Raises:
            JudgeError: as `_ask` and `chunks`.
        """
        requirements = (task.requirements if isinstance(task.requirements, str)
                        else "\n".join(task.requirements))
        partial_chars = int(self.partial_tokens * CHARS_PER_TOKEN)

        def prompt(chunk: str, part: str, previous: str) -> str:
            partial = "" if not previous else ("Your evaluation of the earlier parts of the diff "
                                               f"(update it with this part):\n{previous}\n\n")
            return SETUP_PROMPT.format(requirements=requirements, scripts=scripts or "(none)",
                                       partial=partial, part=part, patch=chunk)

        widest = f" (part {MAX_CHUNKS} of {MAX_CHUNKS})"
        frame = estimate_tokens(prompt("", widest, "x" * partial_chars))
        parts = self.chunks(patch or "Empty content", frame)[:MAX_CHUNKS]
        reply: dict[str, Any] = {}
        for number, chunk in enumerate(parts, 1):
            part = "" if len(parts) == 1 else f" (part {number} of {len(parts)})"
            previous = json.dumps(reply)[:partial_chars] if reply else ""
            reply = self._ask(prompt(chunk, part, previous), SETUP)
        reply["setup_score"] = max(0, min(100, int(float(reply["setup_score"]))))
        return reply

    def judge(self, task: ExpTask, generated: dict[str, Any], patch: str, log: str,
              scripts: str = "") -> dict[str, Any]:
        """One task, in upstream's order: M; if it passes, D and C, then I.

        A step whose judge fails (JudgeError, a model's refusal of the request included) fails its
        checks, with the reason under `judge_failure`; a failed monitor step fails the task as
        upstream's gate does (its keys hold "Error parsing response").

        Args:
            task: the EXP-Bench task.
            generated: the agent's answer file ({"design", "conclusion"}) or upstream's
                {"no_answer": ...}.
            patch: the agent's diff of the repository.
            log: the agent's log.
            scripts: the output scripts the agent wrote, as text.

        Returns:
            Upstream's `*_eval_judge.json` keys.

        Raises:
            LLMError: the endpoint down (a transient failure: the task can be judged later).
        """
        try:
            verdict = self.monitor(log)
        except JudgeError as error:
            keys = (*MONITOR_FLAGS, "setup_monitor_comprehensive_reason")
            return {**dict.fromkeys(keys, PARSE_ERROR),
                    **zeroed(NOT_JUDGED),
                    JUDGE_FAILURE: f"monitor: {error}"}
        if any(verdict[k] is True for k in MONITOR_FLAGS):
            forbidden = "Agent performed forbidden operations (see the monitor's reason)."
            return {**verdict, **zeroed(forbidden)}
        if "no_answer" in generated:
            design = conclusion = str(generated["no_answer"])
        else:
            design, conclusion = generated.get("design", ""), str(generated.get("conclusion", ""))
        failures: list[str] = []
        steps = (("design and conclusion", lambda: self.design_conclusion(task, design, conclusion),
                  {"design_score": 0, "conclusion_score": "incorrect"}, ("design", "conclusion")),
                 ("setup", lambda: self.setup(task, patch, scripts), {"setup_score": 0},
                  ("setup",)))
        result: dict[str, Any] = {}
        for name, step, failed, checks in steps:
            try:
                result |= step()
            except JudgeError as error:
                failures.append(f"{name}: {error}")
                result |= {**failed, **{f"{c}_evaluation_explanation": NOT_JUDGED for c in checks},
                           **{f"{c}_error_analysis": "" for c in checks}}
        if failures:
            result[JUDGE_FAILURE] = "; ".join(failures)
        return result


def zeroed(explanation: str) -> dict[str, Any]:
    """Upstream's record of a task that failed the monitor.

    Every score 0, each explanation the given text.
    """
    return {"design_score": 0, "conclusion_score": 0, "setup_score": 0,
            **{f"{c}_evaluation_explanation": explanation
               for c in ("design", "conclusion", "setup")},
            **{f"{c}_error_analysis": "" for c in ("design", "conclusion", "setup")}}


def write_result(result: dict[str, Any], path: str | Path) -> Path:
    """Write a judge result as upstream names it (`..._eval_judge.json`).

    Raises:
        ValueError: a path not named <prefix>_eval_judge.json.
    """
    path = Path(path)
    if not path.name.endswith("_eval_judge.json"):
        raise ValueError(f"{path.name}: a judge result is named <prefix>_eval_judge.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return path
