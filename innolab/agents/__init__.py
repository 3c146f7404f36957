"""Agent scaffolds on one abstraction: AIDE (workflow), MLAB and CodeAct (agents: tool loops).

Beside them `baseline`, a budget-matched classical search with no model (innolab.agents.baseline).
"""

SCAFFOLDS = {
    "aide": "innolab.agents.aide:AideAgent",
    "mlab": "innolab.agents.mlab:MlabAgent",
    "codeact": "innolab.agents.codeact:CodeActAgent",
    "baseline": "innolab.agents.baseline:BaselinePolicy",
}
