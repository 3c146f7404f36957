"""Agent scaffolds on one abstraction: AIDE (workflow), MLAB and CodeAct (agents: tool loops)."""

SCAFFOLDS = {
    "aide": "innolab.agents.aide:AideAgent",
    "mlab": "innolab.agents.mlab:MlabAgent",
    "codeact": "innolab.agents.codeact:CodeActAgent",
}
