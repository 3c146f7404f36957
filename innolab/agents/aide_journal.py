"""AIDE's journal: a typed, serialisable tree of solution nodes, its search policy and memory.

A node stores what happened (plan, code, output, the validator's verdict); its stage (draft, debug,
improve) and whether it is a leaf are derived from the tree, never stored twice.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from innolab.metrics import best_index
from innolab.traces import Node as NodeEvent

Stage = Literal["draft", "debug", "improve"]


@dataclass
class Node:
    """One node of AIDE's tree: a plan and its program, with how it ran and what the validator said.

    `parent` is the node it was debugged or improved from (None for a draft); `metric` is the
    validator's score where the node is valid.
    """

    id: int
    parent: int | None
    plan: str
    code: str
    output: str = ""
    ran: bool = False
    valid: bool = False
    metric: float | None = None
    evaluated: bool = False  # the validator has judged it

    @property
    def buggy(self) -> bool:
        """Judged by the validator and not valid."""
        return self.evaluated and not self.valid


@dataclass
class SearchPolicy:
    """AIDE's search policy.

    Draft until `num_drafts` drafts exist; then, with probability `debug_prob`, debug a buggy leaf
    whose debug depth is below `max_debug_depth`; otherwise improve the best valid node (greedy), or
    draft again while no node is valid.
    """

    num_drafts: int = 2
    debug_prob: float = 0.5
    max_debug_depth: int = 3


@dataclass
class Journal:
    """The nodes in the order they were made (a node's id is its index), as a tree by parent."""

    nodes: list[Node] = field(default_factory=list)

    # -------------------------------------------------------------------------- derived structure

    def node(self, node_id: int) -> Node:
        """The node with this id."""
        return self.nodes[node_id]

    def children(self, node: Node) -> list[Node]:
        """The nodes made from this one (debugged or improved)."""
        return [n for n in self.nodes if n.parent == node.id]

    def is_leaf(self, node: Node) -> bool:
        """No node was made from this one."""
        return not self.children(node)

    def stage(self, node: Node) -> Stage:
        """draft: no parent; debug: the parent is buggy; improve: the parent is valid."""
        if node.parent is None:
            return "draft"
        return "debug" if self.node(node.parent).buggy else "improve"

    def debug_depth(self, node: Node) -> int:
        """How many debug steps in a row lead to this node."""
        depth = 0
        while node.parent is not None and self.stage(node) == "debug":
            depth += 1
            node = self.node(node.parent)
        return depth

    def best(self, direction: str) -> Node | None:
        """The valid node with the best metric (innolab.metrics' rule).

        Args:
            direction: the objective's direction, "max" or "min".

        Returns:
            The first of the valid nodes with the best metric; None when no valid node has one.
        """
        index = best_index([n.metric if n.valid else None for n in self.nodes], direction)
        return None if index is None else self.nodes[index]

    # --------------------------------------------------------------------------------- the policy

    def choose(self, policy: SearchPolicy, direction: str,
               rng: random.Random) -> tuple[Stage, Node | None]:
        """The next stage by AIDE's search policy.

        Args:
            policy: the search policy's parameters.
            direction: the objective's direction, "max" or "min".
            rng: the run's random numbers for this choice (seeded per node).

        Returns:
            The stage and the node it starts from (None for a draft).
        """
        drafts = [n for n in self.nodes if n.parent is None]
        if len(drafts) < policy.num_drafts:
            return "draft", None
        if rng.random() < policy.debug_prob:
            debuggable = [n for n in self.nodes if n.buggy and self.is_leaf(n)
                          and self.debug_depth(n) < policy.max_debug_depth]
            if debuggable:
                return "debug", rng.choice(debuggable)
        best = self.best(direction)
        return ("improve", best) if best is not None else ("draft", None)

    # --------------------------------------------------------------------------------- the memory

    def summary(self, limit: int = 4000) -> str:
        """The memory of the other nodes that AIDE shows the model.

        Each node's plan, its validator outcome and score (newest last, cut from the oldest to
        `limit` characters).
        """
        lines = []
        for node in self.nodes:
            if not node.evaluated:
                continue
            outcome = (f"valid, score {node.metric!r}" if node.valid
                       else "buggy (no valid submission)")
            plan = " ".join(node.plan.split())[:400] or "(no plan)"
            lines.append(f"- node {node.id} ({self.stage(node)}): {plan} -> {outcome}")
        text = "\n".join(lines)
        return text[-limit:] if len(text) > limit else text

    # --------------------------------------------------------------------------------- plain data

    def to_list(self) -> list[dict[str, Any]]:
        """The nodes as plain JSON data (what the agent's state keeps)."""
        return [asdict(n) for n in self.nodes]

    @classmethod
    def from_list(cls, data: list[dict[str, Any]]) -> Journal:
        """The journal `to_list` wrote (or an older one, whose derived fields are dropped)."""
        known = Node.__dataclass_fields__  # older journals also stored derived fields: dropped
        return cls([Node(**{k: v for k, v in item.items() if k in known}) for item in data])

    def event(self, node: Node) -> NodeEvent:
        """The trace event of an evaluated node.

        Stage and debug depth are derived for readers of the trace.
        """
        return NodeEvent(id=node.id, parent=node.parent, stage=self.stage(node), plan=node.plan,
                         code=node.code, ran=node.ran, valid=node.valid, metric=node.metric,
                         buggy=node.buggy, debug_depth=self.debug_depth(node))
