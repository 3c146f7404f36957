"""What an agent is shown before its first observation, in one place, to be checked for leaks.

A run hands its policy the task's description (each observation's `task_description`), the task's
workspace rules, the prior solution's code (in the system prompt) and the files of its sandbox; the
policy builds its prompts from these and from its own fixed texts. `agent_view` names every one of
them; the runner scans it (innolab.tasks.leaks) before a run starts.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
from types import ModuleType
from typing import Any

from innolab import pyparse
from innolab.gym.policy import RunConfig
from innolab.gym.task import GymTask
from innolab.gym.tools import TOOL_SPECS


def policy_texts(policy: str, options: dict[str, Any] | None = None) -> dict[str, str]:
    """The fixed texts a policy builds its prompts from.

    They are read in the module of the factory and of each of its base classes; a factory with
    `fixed_texts(options)` (an external framework) adds the texts it is shown with those options.

    Args:
        policy: The policy's factory, "module:factory".
        options: The run's `policy_args` (None: the policy's defaults).

    Returns:
        Every upper-case module-level constant that is or holds strings (a role, workspace rules,
        instructions, notes, schemas, as built at import), named "<module>.<NAME>", and every
        string literal the module's source holds (prompts written inside methods, the literal
        parts of f-strings), named "<module> string literals".

    Raises:
        ValueError: A factory that cannot be imported, or a module whose source cannot be read.
    """
    module_name, _, attribute = policy.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise ValueError(f"policy {policy!r} cannot be imported: {error}") from None
    owners = (
        [c.__module__ for c in inspect.getmro(factory)]
        if inspect.isclass(factory)
        else [factory.__module__]
    )
    texts: dict[str, str] = {}
    for owner in dict.fromkeys(owners):
        if owner == "builtins":
            continue
        module = importlib.import_module(owner)
        for name, value in vars(module).items():
            strings = _strings(value)
            if name.isupper() and not name.startswith("_") and strings:
                texts[f"{owner}.{name}"] = "\n".join(strings)
        literals = source_literals(module)
        if literals:
            texts[f"{owner} string literals"] = "\n".join(literals)
    fixed = getattr(factory, "fixed_texts", None)  # an external framework's own prompt texts
    if callable(fixed):
        texts.update(fixed(options or {}))
    return texts


def source_literals(module: ModuleType) -> list[str]:
    """Every string literal in a module's source, in order.

    Args:
        module: The module.

    Returns:
        Its non-blank constants, docstrings, and each literal part of an f-string (ast keeps those
        as constants inside the f-string's node).

    Raises:
        ValueError: A module whose source cannot be read.
    """
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError) as error:
        raise ValueError(
            f"the source of {module.__name__} cannot be read for the leak scan: {error}"
        ) from None
    return [
        node.value
        for node in ast.walk(pyparse.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip()
    ]


def prompt_texts(policies: dict[str, str],
                 options: dict[str, Any] | None = None) -> dict[str, bytes]:
    """The fixed prompt texts of policies and the tools' specifications.

    Args:
        policies: The policies' factories ("module:factory") by agent name.
        options: The policies' `policy_args` (one run's; None: their defaults).

    Returns:
        Each policy's texts (see policy_texts), named "<agent> prompt text <name>", and the tools'
        specifications (what a scaffold with native tool calls is shown), named "tool specs".

    Raises:
        ValueError: A policy that cannot be imported or read.
    """
    texts = {
        f"{agent} prompt text {name}": text.encode()
        for agent, policy in policies.items()
        for name, text in policy_texts(policy, options).items()
    }
    return {**texts, "tool specs": json.dumps(TOOL_SPECS).encode()}


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list | tuple | set | frozenset):
        return [s for item in value for s in _strings(item)]
    return []


def agent_view(config: RunConfig, task: GymTask) -> dict[str, bytes]:
    """Everything the run's agent is shown before its first tool result.

    Args:
        config: The run's configuration (its policy and prior solution).
        task: The run's task.

    Returns:
        By name: the sandbox's files (the description among them), the description as the first
        message, the task's workspace rules, the prior solution, the policy's fixed prompt texts
        and the tools' specifications.

    Raises:
        ValueError: A policy that cannot be imported or read.
    """
    files = dict(task.visible_files())
    if files.get("description.md") != task.description.encode():
        files["task description"] = task.description.encode()
    if task.workspace_rules:
        files["workspace rules"] = task.workspace_rules.encode()
    prior = config.prior_solution or {}
    if prior.get("code"):
        files[f"prior solution {prior.get('name') or 'prior'}"] = str(prior["code"]).encode()
    files.update(prompt_texts({config.agent: config.policy}, config.policy_args))
    return files
