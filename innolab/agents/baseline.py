"""The baseline: a budget-matched classical search with no model, a policy like the scaffolds.

Each round it runs one of innolab's own search templates (`innolab/agents/templates/`, one per
problem family: random restarts with local optimisation for circles and points, projected descent
for step functions, greedy + local search for integer vector sets and schedules) in the sandbox
with the `bash` tool, seeded by the run's seed and the round, warm-started from its best candidate
so far and timed to fit what is left of the budget; it has what the program wrote checked by the
pristine validator (`validate`) and submits it when the dev score improves. Anytime: a longer
budget only adds rounds that start from the best so far. The templates are its own code, never a
task's known solutions (which stay outside every sandbox).
"""

from __future__ import annotations

import hashlib
import shlex
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Literal

from innolab.gym.policy import Action, AgentSpec, Observation
from innolab.gym.tools import DEFAULT_TIMEOUTS, ToolCall, ToolResult
from innolab.metrics import better
from innolab.tasks import families

__all__ = [
    "FAMILIES",
    "NO_MODEL",
    "BaselineError",
    "BaselinePolicy",
    "BaselineState",
    "family_of",
    "round_seed",
    "template",
]

NO_MODEL = "none"  # the baseline's model, as the tables show it
TEMPLATES = Path(__file__).resolve().parent / "templates"
MIN_ROUND_S = 2.0  # a program's shortest time limit
MAX_ROUND_S = 60.0  # and its longest (later rounds restart from the best so far)
ROUND_SHARE = 4  # a round takes at most 1/ROUND_SHARE of what is left
RESERVE_S = 3.0  # kept after a round for its validation and the submission
GRACE_S = 5.0  # the tool's timeout beyond the program's own limit
DEFAULT_ROUND_S = 10.0  # a round's time limit in a run without a wall clock
NO_CANDIDATE = "[baseline] no candidate written"
PRIOR_PROGRAM = "prior_solution.py"  # a prior solution's code, run as the first round
ROLE = ("baseline: a budget-matched classical search with no model, not an agent; it runs "
        "innolab's own search template for the task's problem family")
# every registered family's template: what the baseline writes into a sandbox (scanned for leaks
# like prompts); a task folder's own family brings its template with it (Task.family)
TEMPLATE_SOURCES = families.templates()
FAMILIES = tuple(TEMPLATE_SOURCES)  # the registered families with a template

Phase = Literal["write", "run", "validate"]


class BaselineError(ValueError):
    """A task the baseline cannot search, or an option it does not take; the message says why."""


def template(family: str | families.Family) -> str:
    """The search program of a problem family.

    Args:
        family: The family (a loaded one, or the name of a registered one, e.g. "circles").

    Returns:
        The program's source.

    Raises:
        BaselineError: The family has no template (the message names it and those that have one).
    """
    name = family if isinstance(family, str) else family.name
    source = TEMPLATE_SOURCES.get(name) if isinstance(family, str) else _family_template(family)
    if source is None:
        raise BaselineError(
            f"family: the baseline has no search template for problem family {name!r}; "
            f"templates exist for {', '.join(FAMILIES)}"
            + ("" if isinstance(family, str) else
               " (a family declares one: FamilySpec.baseline, or BASELINE_TEMPLATE in its module)")
        )
    return source


def _family_template(family: families.Family) -> str | None:
    try:
        return family.template()
    except families.FamilyError as error:
        raise BaselineError(f"family: {error}") from None


def family_of(task: Any) -> str:
    """The problem family of a task that the baseline can search.

    Args:
        task: A loaded task (innolab.tasks.model.Task, or another benchmark's GymTask).

    Returns:
        The family.

    Raises:
        BaselineError: The task has no problem family (another benchmark's task) or one without a
            template.
    """
    return _task_family(task).name


def _task_family(task: Any) -> families.Family:
    """The loaded family of a task whose family has a template (see family_of)."""
    found = getattr(task, "family", None)
    if not isinstance(found, families.Family):
        raise BaselineError(
            f"task {getattr(task, 'id', task)!r}: the baseline searches improvable tasks of a "
            f"problem family ({', '.join(FAMILIES)}); this task has none"
        )
    template(found)
    return found


def round_seed(seed: int, round_index: int) -> int:
    """The seed of one round's program: sha256('<run seed>:baseline:<round>')[:4] (31 bits).

    Args:
        seed: The run's seed.
        round_index: The round (0, 1, ...).

    Returns:
        A seed in [0, 2**31).
    """
    digest = hashlib.sha256(f"{seed}:baseline:{round_index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass
class BaselineState:
    """The baseline's state, plain JSON data.

    The phase of the current round (write the program, run a round, validate its candidate), the
    round's number, the candidate it writes, the best candidate so far with its dev score, the
    candidate waiting to be submitted and the number of improving candidates.
    """

    phase: Phase = "write"
    round: int = 0
    candidate: str | None = None
    command: str | None = None
    best_file: str | None = None
    best_score: float | None = None
    to_submit: str | None = None
    submit_command: str | None = None
    improvements: int = 0

    def to_json(self) -> dict[str, Any]:
        """The state as plain JSON data."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> BaselineState:
        """The state `to_json` wrote.

        Args:
            data: The checkpointed state.

        Returns:
            The state.

        Raises:
            ValueError: Not an object, an unknown field, or a phase that is not one of the three.
        """
        if not isinstance(data, dict):
            raise ValueError(f"BaselineState: a policy state is a JSON object, got "
                             f"{type(data).__name__}")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"BaselineState: unknown field(s) {unknown} in the policy state")
        state = cls(**data)
        if state.phase not in ("write", "run", "validate"):
            raise ValueError(f"BaselineState: field 'phase' must be write, run or validate, got "
                             f"{state.phase!r}")
        return state


class BaselinePolicy:
    """A budget-matched classical search: no model, one template per problem family.

    Args:
        family: The task's problem family (set by the runner from the task).
        seed: The run's seed (set by the runner).
        initial_solution: A prior solution's code (set by the runner from the run's prior
            solution): run as the first round, its submission.json validated like a candidate
            and, when valid, the first warm start.
        template_source: The family's template, given where it is a task folder's own (None:
            the registered family's).

    Raises:
        BaselineError: A family without a template.
    """

    name = "baseline"

    def __init__(self, family: str, seed: int = 0, initial_solution: str | None = None,
                 template_source: str | None = None) -> None:
        self.family = family
        self.initial_solution = initial_solution
        self.seed = int(seed)
        self.source = template_source if template_source is not None else template(family)
        self.program = f"baseline_{family}.py"
        self.memory = BaselineState()

    def state(self) -> dict[str, Any]:
        """The state as plain JSON data, checkpointed after each step."""
        return self.memory.to_json()

    def load_state(self, state: dict[str, Any]) -> None:
        """Continue from a checkpointed state.

        Args:
            state: What `state()` returned.

        Raises:
            ValueError: The state is malformed (the message names the field).
        """
        self.memory = BaselineState.from_json(state)

    # ------------------------------------------------------------------------------------- steps

    def step(self, observation: Observation) -> Action:
        """One step: write the program, run a round, or validate the round's candidate.

        Args:
            observation: The last step's results and what is left of the budget.

        Returns:
            The step's tool calls; done when too little time is left for another round.
        """
        memory = self.memory
        if memory.phase == "write":
            memory.phase = "run"
            calls = [ToolCall("write", "write_file",
                              {"path": self.program, "content": self.source})]
            if self.initial_solution:
                calls.append(ToolCall("write-prior", "write_file",
                                      {"path": PRIOR_PROGRAM, "content": self.initial_solution}))
            return Action(calls)
        if memory.phase == "validate":
            self._read_verdict(observation.results, observation.direction)
        elif memory.candidate is not None:  # the round ran: validate what it wrote, if anything
            ran = _result(observation.results, f"r{memory.round}")
            # a program killed at its timeout may have written a candidate: it is validated too
            if ran is None or NO_CANDIDATE not in ran.output:
                memory.phase = "validate"
                return Action([ToolCall(f"r{memory.round}-v", "validate",
                                        {"path": memory.candidate})])
            memory.round += 1
        return self._next_round(observation.remaining_s)

    def _read_verdict(self, results: list[ToolResult], direction: str) -> None:
        """Take the round's validation: an improving candidate becomes the best, to be submitted."""
        memory = self.memory
        checked = _result(results, f"r{memory.round}-v")
        verdict = checked.extra.get("verdict", {}) if checked is not None else {}
        score = verdict.get("score")
        if verdict.get("valid") and isinstance(score, int | float) and better(
                float(score), memory.best_score, direction):  # type: ignore[arg-type]
            memory.best_file, memory.best_score = memory.candidate, float(score)
            memory.to_submit, memory.submit_command = memory.candidate, memory.command
            memory.improvements += 1
        memory.round += 1
        memory.phase = "run"

    def _next_round(self, remaining_s: float | None) -> Action:
        """Run the next round's program (and submit the last improvement beside it)."""
        memory = self.memory
        calls = []
        if memory.to_submit is not None:
            if memory.submit_command == f"python3 {PRIOR_PROGRAM}":
                source = self.initial_solution
            else:
                source = f"{self.source.rstrip()}\n# ran as: {memory.submit_command}\n"
            calls.append(ToolCall(f"s{memory.round}", "submit", {"path": memory.to_submit},
                                  source=source))
            memory.to_submit = memory.submit_command = None
        limit = round_limit(remaining_s, first=memory.round == 0)
        if limit is None:  # no time for another round: submit what is pending, then stop
            memory.candidate = None
            return Action(calls, done=not calls)
        memory.candidate = f"candidate-{memory.round}.json"
        out = shlex.quote(memory.candidate)
        if memory.round == 0 and self.initial_solution:  # the prior solution's program first
            memory.command = f"python3 {PRIOR_PROGRAM}"
            run = f"rm -f submission.json; {memory.command} && mv submission.json {out}"
        else:
            args = ["--seed", str(round_seed(self.seed, memory.round)), "--time", f"{limit:.1f}"]
            if memory.best_file is not None:
                args += ["--warm", memory.best_file]
            args += ["--out", memory.candidate]
            memory.command = run = shlex.join(["python3", self.program, *args])
        script = (f"rm -f {out}; {run}; status=$?; "
                  f"[ -f {out} ] || echo '{NO_CANDIDATE}'; exit $status")
        calls.append(ToolCall(f"r{memory.round}", "bash",
                              {"command": script, "timeout": limit + GRACE_S}))
        return Action(calls)


def round_limit(remaining_s: float | None, first: bool = False) -> float | None:
    """A round program's time limit from what is left of the wall clock.

    A quarter of what is left (an eighth for the first round, so that a first candidate comes
    early), within [MIN_ROUND_S, MAX_ROUND_S], within the bash tool's default timeout, and leaving
    the reserve for validation and submission.

    Args:
        remaining_s: Seconds left (None: no wall clock).
        first: Whether the round is the run's first.

    Returns:
        Seconds, or None when too little is left for a round.
    """
    cap = min(MAX_ROUND_S, DEFAULT_TIMEOUTS["bash"] - 2 * GRACE_S)
    if remaining_s is None:
        return DEFAULT_ROUND_S
    usable = remaining_s - RESERVE_S
    if usable < MIN_ROUND_S:
        return None
    share = remaining_s / (2 * ROUND_SHARE if first else ROUND_SHARE)
    return min(cap, usable, max(MIN_ROUND_S, share))


def _result(results: list[ToolResult], call_id: str) -> ToolResult | None:
    return next((r for r in results if r.call_id == call_id), None)



def resolve_args(task: Any, seed: int, initial_solution: str | None) -> dict[str, Any]:
    """The baseline's policy arguments for a run: the task's family, the seed, a prior program.

    Args:
        task: The loaded task.
        seed: The run seed.
        initial_solution: The prior solution's code (None: from scratch).

    Returns:
        The policy's arguments.

    Raises:
        BaselineError: A task whose family has no search template.
    """
    found = _task_family(task)
    args: dict[str, Any] = {"family": found.name, "seed": seed}
    if found.name not in TEMPLATE_SOURCES or TEMPLATE_SOURCES[found.name] != template(found):
        args["template_source"] = template(found)  # a task folder's own family's template
    if initial_solution is not None:
        args["initial_solution"] = initial_solution
    return args


AGENT = AgentSpec(name="baseline", factory=BaselinePolicy, mode="no model", needs_model=False,
                  resolve=resolve_args,
                  description="a budget-matched classical search of the task's problem family "
                  "(innolab's own templates; not an agent)")
