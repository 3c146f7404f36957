"""iGym: the execution environment (sandboxes, tools, async dispatcher, budgets, traces, checkpoint/resume)."""
