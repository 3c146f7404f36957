"""Agent scaffolds on one abstraction: AIDE (workflow), MLAB and CodeAct (agents: tool loops).

Beside them `baseline`, a budget-matched classical search with no model (innolab.agents.baseline).
Every agent, these included, is found through the registry of the entry-point group
`innolab.agents` (innolab.agents.registry).
"""
