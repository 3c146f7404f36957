"""iGym: the execution environment (sandboxes, tools, dispatcher, budgets, traces, resume)."""
