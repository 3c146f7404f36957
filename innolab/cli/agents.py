"""`innolab agents list`: every registered agent, its mode, options and distribution."""

from __future__ import annotations

import argparse
import json

from innolab.cli.common import Commands, group


def register(commands: Commands) -> None:
    """Add `agents list`.

    Args:
        commands: The parent parser's subparsers.
    """
    sub = group(commands, "agents", "the agents a run can name (the registry `innolab.agents`)")
    listing = sub.add_parser(
        "list", help="each agent's name, mode, whether it needs a model, its options and the "
        "distribution that provides it; broken entries with their error")
    listing.add_argument("--json", action="store_true", help="as JSON, one object per agent")
    listing.set_defaults(handler=list_agents)


def list_agents(args: argparse.Namespace) -> int:
    """Print the registry (a broken entry is listed with its error, never a crash).

    Args:
        args: json.

    Returns:
        0.
    """
    from innolab import runspec
    from innolab.agents import registry

    runspec.register_rules()  # an option named like a part of a run's record: listed as broken
    entries = [entry.as_dict() for entry in registry.registered(reload=True).values()]
    if args.json:
        print(json.dumps(entries, indent=1, default=str))
        return 0
    for entry in entries:
        origin = f"{entry['distribution']} {entry['version']}"
        if entry["broken"]:
            print(f"{entry['name']:<15} BROKEN  ({origin}, {entry['entry_point']}): "
                  f"{entry['error']}")
            continue
        model = "needs a model" if entry["needs_model"] else "no model"
        print(f"{entry['name']:<15} {entry['mode']:<10} {model:<14} {origin}")
        for name, option in entry["options"].items():
            print(f"{'':<17}--{name.replace('_', '-')} ({option['type']}, default "
                  f"{option['default']!r}): {option['description']}")
    return 0
