"""Agent scaffolds on one abstraction: AIDE (workflow: tree search), MLAB and CodeAct (agent: tool loops)."""

SCAFFOLDS = {
    "aide": "innolab.agents.aide:AideAgent",
    "mlab": "innolab.agents.mlab:MlabAgent",
    "codeact": "innolab.agents.codeact:CodeActAgent",
}
