"""One colour per agent in every figure: the built-in agents and the baseline keep theirs.

A figure that draws groups asks `colours(groups)`: a group that names an agent ("aide", "codeact",
"mlab"; "baseline" or its label "baseline (classical search)") gets that agent's colour in every
figure, and any other group (a temperature, a budget, "all") gets the next colour of the
colour-blind palette that no agent holds. The baseline, a control and not an agent, is black.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# seaborn's "colorblind" palette, by hand (no import needed to read a colour)
PALETTE = ["#0173B2", "#DE8F05", "#029E73", "#D55E00", "#CC78BC", "#CA9161", "#FBAFE4",
           "#949494", "#ECE133", "#56B4E9"]
AGENT_COLOURS = {"aide": "#0173B2", "codeact": "#029E73", "mlab": "#CC78BC",
                 "baseline": "#222222"}
FREE = [c for c in PALETTE if c not in AGENT_COLOURS.values()]


def agent_of(group: Any) -> str | None:
    """The agent a group names, if any.

    "aide", "AIDE", "aide T=0.25" and "baseline (classical search)" name agents; "0.25" does not.

    Args:
        group: A group's value or label.

    Returns:
        The agent's name, or None.
    """
    text = str(group).strip().lower()
    for agent in AGENT_COLOURS:
        if text == agent or text.startswith((f"{agent} ", f"{agent}(")):
            return agent
    return None


def colours(groups: Iterable[Any]) -> dict[Any, str]:
    """A colour for each group: an agent's own, else the next free one of the palette.

    Args:
        groups: The groups, in the order they are drawn.

    Returns:
        {group: colour}.
    """
    out: dict[Any, str] = {}
    free = iter(FREE * 10)
    for group in groups:
        if group in out:
            continue
        agent = agent_of(group)
        out[group] = AGENT_COLOURS[agent] if agent else next(free)
    return out
